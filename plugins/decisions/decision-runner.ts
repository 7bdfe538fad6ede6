import type { Lease } from '../leases/lease.js'
import { GatewayError } from '../../core/base/errors.js'
import { d1Labels, type D1Labels } from './d1-labels.js'
import type { DecisionAsk, DecisionQuestion, QuestionProbabilities } from './decision-questions.js'
import { DecisionContextError, RequestTooLargeError, UnprocessableError } from './decision-errors.js'
import { inputTokens, softmax } from './decision-math.js'
import { labelsNeeded, type PromptMaker } from './decision-prompts.js'
import { averaged, shownProbabilities, taskPlans, type TaskPlan } from './decision-schemes.js'
import type { LabelTokens } from './label-tokens.js'

// An equal bias on every label lifts them above the rest of the vocabulary and leaves their ratios as they were:
// top_k then keeps exactly the labels, and the sampler's probabilities are theirs alone.
const LABEL_BIAS = 100
// llama.cpp's default budget: 8 slots' contexts of prompt tokens in one request.
const BUDGET_CONTEXTS = 8
// Prompts rendered and tokenized at once.
const TOKENIZED_AT_ONCE = 8

/** What one request's questions came to: each question's probabilities, the tokens it is counted for, and what the runtime read. */
export interface DecisionRun {
  answers: QuestionProbabilities[]
  /** Every task's prompt tokens, the prefix they share counted once (the protocol's usage.input_tokens). */
  inputTokens: number
  /** The prompt tokens llama-server evaluated for it (its timings), the rest came from its cache. */
  evaluatedTokens: number
  /** The prompts it took: a lev choice takes two. */
  tasks: number
  /** Each task's prompt tokens, in order. */
  promptTokens: number[]
}

interface Completion {
  completion_probabilities?: Array<{ top_probs?: Array<{ id?: unknown, prob?: unknown }> }>
  timings?: { prompt_n?: unknown }
}

/**
 * Answers a request's questions on a leased runtime, with no engine change: each task's prompt rendered and
 * tokenized, then evaluated with /completion for one token, the labels lifted by an equal logit bias, top_k their
 * number and neutral samplers, so that llama-server's post-sampling probabilities are the labels' softmax; from
 * their logarithms (the logits, less one constant) the calibrated softmax at the question's temperature. The tasks
 * run one after another on the lease's slot: the state, which every prompt opens with, is read once and the others
 * evaluate only their tails from its cache.
 * @throws UnprocessableError, RequestTooLargeError, DecisionContextError
 */
export async function runDecision (lease: Lease, maker: PromptMaker, labelTokens: LabelTokens, ask: DecisionAsk): Promise<DecisionRun> {
  const { scheme } = maker
  const groups = scheme.groupsLabels === true ? await questionLabels(lease, labelTokens, ask) : null
  const needed = groups !== null ? 0 : labelsNeeded(scheme, ask.questions)
  const labels = groups !== null ? { codes: [], tokens: [] } : await labelTokens.first(lease, scheme.codes, Math.min(needed, scheme.maxLabels), scheme.allCodes)
  if (labels.codes.length < needed) {
    const question = ask.questions.find((q) => q.options.length > labels.codes.length)!
    throw new UnprocessableError(`questions.${question.id}: "criteria" has ${question.options.length} options, at most ${labels.codes.length} are supported`)
  }
  const plans = taskPlans(scheme, ask.questions)
  const budget = BUDGET_CONTEXTS * lease.contextLength
  const prompts: number[][] = []
  let total = 0
  // A few tokenized at once (llama-server answers /tokenize beside its slots' work), the budget checked after each
  // few: a request of thousands of questions is refused before it renders them all.
  for (let at = 0; at < plans.length; at += TOKENIZED_AT_ONCE) {
    const chunk = plans.slice(at, at + TOKENIZED_AT_ONCE)
    const tokenized = await Promise.all(chunk.map(async (plan) => {
      const text = await maker.render(plan, groups?.get(plan.question)!.texts ?? labels.codes, ask, lease)
      const { tokens } = await lease.endpoint.postJson<{ tokens: unknown }>('/tokenize', { content: text, add_special: false, parse_special: true }, lease.signal)
      if (!Array.isArray(tokens) || !tokens.every(Number.isInteger)) throw new Error('the model\'s runtime answered /tokenize without a list of tokens')
      return tokens as number[]
    }))
    for (const [i, tokens] of tokenized.entries()) {
      if (tokens.length === 0) throw new UnprocessableError(`questions.${chunk[i]!.question.id}: the rendered prompt is empty; provide a non-empty "state" or non-empty "instructions"`)
      if (tokens.length >= lease.contextLength) throw new DecisionContextError(tokens.length, lease.contextLength)
      total += tokens.length
      if (total > budget) throw new RequestTooLargeError(`The request renders ${total} prompt tokens, the maximum is ${budget}. Give a shorter "state" or fewer questions`)
      prompts.push(tokens)
    }
  }
  let evaluated = 0
  const results: Array<{ plan: TaskPlan, p: number[] }> = []
  for (const [i, plan] of plans.entries()) {
    const own = groups?.get(plan.question)
    const ids = own !== undefined ? [...new Set(own.groups.flat())] : labels.tokens.slice(0, plan.outputs)
    const read = await labelScores(lease, prompts[i]!, ids, i > 0)
    const promptN = read.promptN
    // d1: an option's score is the highest of its forms' (llama.cpp's send_decision).
    const scores = own !== undefined ? own.groups.map((group) => Math.max(...group.map((id) => read.scores[ids.indexOf(id)]!))) : read.scores
    evaluated += promptN
    results.push({ plan, p: shownProbabilities(plan, softmax(scores, maker.temperature(plan.question))) })
  }
  const answers = ask.questions.map((question) => ({ question, probabilities: averaged(results.filter((r) => r.plan.question === question)) }))
  return { answers, inputTokens: inputTokens(prompts), evaluatedTokens: evaluated, tasks: plans.length, promptTokens: prompts.map((p) => p.length) }
}

/** Each question's own labels (d1's), asked of the model's tokenizer. @throws UnprocessableError when a question has none left */
async function questionLabels (lease: Lease, labelTokens: LabelTokens, ask: DecisionAsk): Promise<Map<DecisionQuestion, D1Labels>> {
  const out = new Map<DecisionQuestion, D1Labels>()
  for (const question of ask.questions) {
    try {
      out.set(question, await d1Labels(question, (text) => labelTokens.single(lease, text)))
    } catch (err) {
      // The runtime's own failures are themselves; only a question's labels running out is the request's fault.
      if (lease.signal.aborted || err instanceof GatewayError) throw err
      throw new UnprocessableError(`questions.${question.id}: ${(err as Error).message}`)
    }
  }
  return out
}

/**
 * The labels' log-probabilities at the prompt's end (their logits, less one constant), in the labels' order.
 * `fromCache`: the prompt starts from what the slot holds (a request's later tasks, which share its first's state);
 * a request's first task is read whole, so that its answers do not depend on what earlier requests left in the
 * cache (on a CPU the logits move by ~1e-4 with where a prompt's batches are cut).
 */
async function labelScores (lease: Lease, prompt: number[], labels: number[], fromCache: boolean): Promise<{ scores: number[], promptN: number }> {
  const answer = await lease.endpoint.postJson<Completion>('/completion', {
    prompt,
    n_predict: 1,
    cache_prompt: fromCache,
    n_probs: labels.length,
    post_sampling_probs: true,
    logit_bias: labels.map((id) => [id, LABEL_BIAS]),
    samplers: ['top_k', 'temperature'],
    top_k: labels.length,
    temperature: 1,
    top_p: 1,
    min_p: 0,
    typical_p: 1,
    repeat_penalty: 1,
    presence_penalty: 0,
    frequency_penalty: 0,
    dry_multiplier: 0,
    xtc_probability: 0,
    mirostat: 0,
    stream: false,
  }, lease.signal)
  const top = answer.completion_probabilities?.[0]?.top_probs
  if (!Array.isArray(top)) throw new Error('the model\'s runtime answered /completion without the labels\' probabilities')
  const byId = new Map<number, number>()
  for (const entry of top) if (typeof entry.id === 'number' && typeof entry.prob === 'number') byId.set(entry.id, entry.prob)
  const scores = labels.map((id) => {
    const p = byId.get(id)
    if (p === undefined || !Number.isFinite(p) || p < 0) throw new Error(`the model's runtime gave no probability for label token ${id}`)
    return Math.log(p)
  })
  if (scores.every((s) => s === -Infinity)) throw new Error('the model could not evaluate the decision')
  const promptN = typeof answer.timings?.prompt_n === 'number' ? answer.timings.prompt_n : prompt.length
  return { scores, promptN }
}
