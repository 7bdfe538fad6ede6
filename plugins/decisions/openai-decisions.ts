import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { Static } from 'typebox'
import { clientGone } from '../../core/server/event-stream.js'
import { parseKeepAlive } from '../../core/base/units.js'
import { argmax, choiceConfidence, scoreConfidence } from './decision-math.js'
import type { DecisionOption, DecisionQuestion, QuestionProbabilities } from './decision-questions.js'
import { DecisionsBody } from './schemas.js'
import { stateForHooks, stateFromHooks } from './decision-call-hooks.js'
import type { DecisionCall, Decisions } from './decision-service.js'
import { withAnswerCallHooks } from '../call-hooks/answer-call-hooks.js'
import { callContext } from '../call-hooks/call-context.js'

type Body = Static<typeof DecisionsBody>
type Asked = Body['questions'][number]

/** OpenAI's input as a state: text as it is, messages with their parts' text and JSON kept. */
function stateOf (input: Body['input']): unknown {
  if (typeof input === 'string') return input
  return input.map((item) => {
    if (typeof item !== 'object' || item === null) return item
    const { role, content } = item as { role?: unknown, content?: unknown }
    if (!Array.isArray(content)) return { role, content }
    return { role, content: content.map(partText).filter((t) => t !== '').join('\n') }
  })
}

/** An input part as text (input_text, input_json); an image is not read here. */
function partText (part: unknown): string {
  if (typeof part === 'string') return part
  if (typeof part !== 'object' || part === null) return ''
  const p = part as { type?: unknown, text?: unknown, data?: unknown }
  if (typeof p.text === 'string') return p.text
  if (p.type === 'input_json') return JSON.stringify(p.data)
  return ''
}

/** OpenAI's question as System One's: a predicate is a noul, levels a score. */
function questionOf (asked: Asked, index: number, noulTrueFirst: boolean): DecisionQuestion {
  const id = asked.name ?? `question_${index + 1}`
  const instructions = typeof asked.instructions === 'string' ? asked.instructions : asked.instructions.map(partText).join('\n')
  switch (asked.type) {
    case 'predicate': {
      const options: DecisionOption[] = [{ key: 'true', description: null }, { key: 'false', description: null }]
      return { id, type: 'noul', instructions, options: noulTrueFirst ? options : options.reverse() }
    }
    case 'choice':
      return { id, type: 'choice', instructions, options: asked.choices.map((c) => ({ key: String(c.value), description: c.description ?? null })) }
    case 'score':
      return { id, type: 'score', instructions, options: asked.levels.map((l, i) => ({ key: String(i), description: l.description != null ? `${l.label}: ${l.description}` : l.label })) }
  }
}

/** An answer in OpenAI's shape; a choice keeps the value's type as sent (`true` is not `"true"`). */
function answerOf (asked: Asked, { question, probabilities: p }: QuestionProbabilities): unknown {
  const name = asked.name ?? null
  switch (asked.type) {
    case 'predicate':
      return { type: 'predicate', name, probability: p[question.options.findIndex((o) => o.key === 'true')] }
    case 'choice':
      return { type: 'choice', name, choice: asked.choices[argmax(p)]!.value, confidence: choiceConfidence(p), probabilities: asked.choices.map((c, i) => ({ value: c.value, probability: p[i] })) }
    case 'score':
      return { type: 'score', name, score: p.reduce((sum, pi, i) => sum + i * pi, 0), confidence: scoreConfidence(p), probabilities: asked.levels.map((l, i) => ({ value: i, label: l.label, probability: p[i] })) }
  }
}

/**
 * `POST /v1/decisions`, OpenAI's Decisions API on the same machinery as /v1/systemone: answers in the questions'
 * order; a question the model cannot answer (more choices than it has labels) is a `refusal`, not a failed request.
 */
const openAiDecisions: FastifyPluginAsyncTypebox = async (app) => {
  app.post('/v1/decisions', { config: { scope: 'infer' }, schema: { body: DecisionsBody } }, async (request, reply) => {
    const { body } = request
    const keepAliveMs = parseKeepAlive(body.keep_alive)
    const context = { signal: clientGone(reply), usage: request.usage, log: request.log, ...(keepAliveMs !== undefined ? { keepAliveMs } : {}) }
    const state = stateOf(body.input)
    // The plugins' call hooks see the input as a state (decision-call-hooks.ts) and the questions as options.questions.
    const start = { model: body.model, ...stateForHooks(state), options: { questions: body.questions } }
    return withAnswerCallHooks(callContext(request), start, context.signal, async (call, signal) => {
      const asked = { ...body, model: call.model, questions: call.options.questions as Body['questions'] }
      if (app.decisions.upstream(asked.model)) {
        return app.decisions.forward('/v1/decisions', { ...context, signal, model: asked.model, request: asked }, (answer) => (answer as { usage?: { input_tokens?: unknown } }).usage?.input_tokens) as Promise<DecisionsReply>
      }
      return decisionsOf(app.decisions, asked, stateFromHooks(call, state), { ...context, signal })
    }, (answer) => ({ text: JSON.stringify(answer.answers ?? null), promptTokens: typeof answer.usage?.input_tokens === 'number' ? answer.usage.input_tokens : null, completionTokens: 0 }))
  })
}

/** What /v1/decisions answers: OpenAI's decision object (an upstream's as it gave it). */
interface DecisionsReply { answers?: unknown, usage?: { input_tokens?: number | null, [field: string]: unknown }, [field: string]: unknown }

/** Asks `body`'s questions of its model on `state`, in OpenAI's shape. */
async function decisionsOf (decisions: Decisions, body: Body, state: unknown, context: Omit<DecisionCall, 'model' | 'ask'>): Promise<DecisionsReply> {
  const maker = decisions.makerFor(body.model)
  const questions = body.questions.map((q, i) => questionOf(q, i, maker.scheme.noulTrueFirst))
  const answerable = questions.filter((q) => q.options.length <= maker.scheme.maxLabels)
  const result = answerable.length === 0 ? null : await decisions.decide({ ...context, model: body.model, ask: { state, questions: answerable } }, maker)
  const answered = new Map(result?.answers.map((a) => [a.question, a]))
  const input = result?.inputTokens ?? 0
  return {
    object: 'decision',
    model: result?.model ?? body.model,
    answers: body.questions.map((asked, i) => {
      const answer = answered.get(questions[i]!)
      return answer === undefined ? { type: 'refusal', name: asked.name ?? null } : answerOf(asked, answer)
    }),
    usage: {
      input_tokens: input,
      input_tokens_details: { cached_tokens: result === null ? 0 : Math.max(0, input - result.evaluatedTokens), cache_write_tokens: 0 },
      output_tokens: 0,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: input,
    },
  }
}

export default openAiDecisions
