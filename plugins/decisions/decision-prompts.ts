import type { Lease } from '../leases/lease.js'
import type { DecisionAsk, DecisionQuestion } from './decision-questions.js'
import { temperatureOf } from './decision-math.js'
import { LEV_RATINGS, templateInput, type DecisionScheme, type TaskPlan } from './decision-schemes.js'
import { TemplateRenderer } from './template-renderer.js'

/** How one model's questions become prompts: its labels, its calibration, and the text of each task. */
export interface PromptMaker {
  scheme: DecisionScheme
  temperature(question: DecisionQuestion): number
  render(plan: TaskPlan, labels: readonly string[], ask: DecisionAsk, lease: Lease): Promise<string>
}

// A model file's template runs on a thread of its own, bounded in time and memory (template-renderer.ts).
const templates = new TemplateRenderer()

/** A decision model's own question template (`tokenizer.chat_template.systemone`), rendered as llama.cpp renders it. */
export function systemOnePrompts (scheme: DecisionScheme, source: string, temperatures: Readonly<Record<string, number>>): PromptMaker {
  return {
    scheme,
    temperature: (question) => temperatureOf(temperatures, scheme.type, question),
    render: async (plan, labels, ask) => templates.render(source, templateInput(scheme, plan, ask.state, labels, ask.questions)),
  }
}

const LETTERS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ'

/**
 * A chat model asked as vLLM asks one: the state and the question as one user turn in the model's own chat template
 * (thinking off), the options lettered, and the answer read from the letters' probabilities as the reply's first
 * token. Uncalibrated: the temperature is 1.
 */
export const CHAT_SCHEME: DecisionScheme = {
  type: 'chat', codes: [...LETTERS, ...LETTERS.toLowerCase()], allCodes: false, maxLabels: 52, noulTrueFirst: true,
  labelsOptions: true, sortsKeys: false, givesQuestions: false, asksBothWays: false, ratesNouls: false,
}

export const chatPrompts: PromptMaker = {
  scheme: CHAT_SCHEME,
  temperature: () => 1,
  async render (plan, labels, ask, lease) {
    const { question } = plan
    const lines = plan.shown.map((o, i) => {
      const what = question.type === 'noul' ? (o.key === 'true' ? 'yes' : 'no') : question.type === 'score' ? `level ${o.key}` : o.key
      const description = o.description === null ? '' : `: ${asText(o.description)}`
      return `${labels[i]}. ${what}${description}`
    })
    const content = `${asText(ask.state)}\n\nQuestion: ${asText(question.instructions)}\nOptions:\n${lines.join('\n')}\n\nAnswer with the letter of one option only.`
    const { prompt } = await lease.endpoint.postJson<{ prompt?: unknown }>('/apply-template', {
      messages: [{ role: 'user', content }],
      chat_template_kwargs: { enable_thinking: false },
    }, lease.signal)
    if (typeof prompt !== 'string') throw new Error('the model\'s runtime rendered no prompt for the question (/apply-template)')
    return prompt
  },
}

/** A state, instructions or description as text: a string as it is, chat messages turn by turn, other JSON as JSON. */
function asText (value: unknown): string {
  if (typeof value === 'string') return value
  const messages = Array.isArray(value) ? value : typeof value === 'object' && value !== null && Array.isArray((value as { messages?: unknown }).messages) ? (value as { messages: unknown[] }).messages : null
  if (messages !== null && messages.every((m) => typeof m === 'object' && m !== null && 'role' in m)) {
    return messages.map((m) => `${String((m as { role: unknown }).role)}: ${asText((m as { content?: unknown }).content ?? '')}`).join('\n')
  }
  return JSON.stringify(value)
}

/** How many labels a request needs: its largest question's options (a lev noul's nine ratings). */
export function labelsNeeded (scheme: DecisionScheme, questions: readonly DecisionQuestion[]): number {
  return Math.max(...questions.map((q) => scheme.ratesNouls && q.type === 'noul' ? LEV_RATINGS : q.options.length))
}
