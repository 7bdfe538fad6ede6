import type { ChoiceAnswer, NoulAnswer, ScoreAnswer, SystemOneAnswer } from '../../core/platform/decision-asker.js'
import type { DecisionQuestion, QuestionProbabilities } from './decision-questions.js'

/**
 * The calibration temperature of a question (llama.cpp's server-decision): the model's `<type>.<bucket>`, else
 * `<type>`, else 1. The bucket is by option count: lev's `small` (≤ 8), `mid` (≤ 26), `large`; the others' `2`,
 * `3_5`, `6_10`, `11`.
 */
export function temperatureOf (temperatures: Readonly<Record<string, number>>, decisionType: string, question: Pick<DecisionQuestion, 'type' | 'options'>): number {
  const n = question.options.length
  const bucket = decisionType === 'lev'
    ? (n <= 8 ? 'small' : n <= 26 ? 'mid' : 'large')
    : (n <= 2 ? '2' : n <= 5 ? '3_5' : n <= 10 ? '6_10' : '11')
  return own(temperatures, `${question.type}.${bucket}`) ?? own(temperatures, question.type) ?? 1
}

function own (record: Readonly<Record<string, number>>, key: string): number | undefined {
  return Object.prototype.hasOwnProperty.call(record, key) ? record[key] : undefined
}

/** softmax(s / T) over the labels' scores, in double, the largest subtracted first. */
export function softmax (scores: readonly number[], temperature: number): number[] {
  const max = Math.max(...scores)
  const e = scores.map((s) => Math.exp((s - max) / temperature))
  const sum = e.reduce((a, b) => a + b, 0)
  return e.map((x) => x / sum)
}

/** A choice's confidence (TypeSafe's formula, llama.cpp's): how far its top probability stands above a uniform guess. */
export function choiceConfidence (p: readonly number[]): number {
  const n = p.length
  if (n < 2) return 1
  return Math.max(0, (Math.max(...p) - 1 / n) / (1 - 1 / n))
}

/** A score's confidence: 1 less the expected distance from the mode, over that of a uniform guess, within [0, 1]. */
export function scoreConfidence (p: readonly number[]): number {
  const n = p.length
  if (n < 2) return 1
  const mode = argmax(p)
  const distance = p.reduce((sum, pi, i) => sum + pi * Math.abs(i - mode), 0)
  let uniform = 0
  for (let i = 0; i < n; i++) uniform += Math.abs(i - (n - 1) / 2)
  uniform /= n
  return Math.min(1, Math.max(0, 1 - distance / uniform))
}

/** The index of the first largest value. */
export function argmax (p: readonly number[]): number {
  let best = 0
  for (let i = 1; i < p.length; i++) if (p[i]! > p[best]!) best = i
  return best
}

export type { ChoiceAnswer, NoulAnswer, ScoreAnswer, SystemOneAnswer }

/**
 * A question's answer in System One's shape, keys in llama.cpp's order: a noul is P(true); a choice its most
 * probable key with every key's probability; a score Σ i·p_i with its legend.
 */
export function systemOneAnswer ({ question, probabilities: p }: QuestionProbabilities): SystemOneAnswer {
  const keyed = (): Record<string, number> => Object.fromEntries(question.options.map((o, i) => [o.key, p[i]!]))
  switch (question.type) {
    case 'noul': {
      const t = question.options.findIndex((o) => o.key === 'true')
      return { type: 'noul', noul: p[t]! }
    }
    case 'choice':
      return { type: 'choice', choice: question.options[argmax(p)]!.key, probabilities: keyed(), confidence: choiceConfidence(p) }
    case 'score':
      return {
        type: 'score',
        score: p.reduce((sum, pi, i) => sum + i * pi, 0),
        legend: Object.fromEntries(question.options.map((o) => [o.key, o.description])),
        probabilities: keyed(),
        confidence: scoreConfidence(p),
      }
  }
}

/**
 * The prompt tokens a request is counted for: every task's tokens, less the prefix its tasks share, counted once
 * (each task keeps at least one token of its own): the state, which every question's prompt opens with.
 */
export function inputTokens (tasks: readonly (readonly number[])[]): number {
  const total = tasks.reduce((sum, t) => sum + t.length, 0)
  if (tasks.length < 2) return total
  const parent = tasks[0]!
  let shared = parent.length - 1
  for (const task of tasks.slice(1)) shared = Math.min(shared, commonPrefix(parent, task), task.length - 1)
  return Math.max(0, total - Math.max(0, shared) * (tasks.length - 1))
}

/** How many tokens two lists open with alike. */
export function commonPrefix (a: readonly number[], b: readonly number[]): number {
  const n = Math.min(a.length, b.length)
  let i = 0
  while (i < n && a[i] === b[i]) i++
  return i
}
