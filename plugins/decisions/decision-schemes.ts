import type { DecisionOption, DecisionQuestion } from './decision-questions.js'

/**
 * How a type of decision model is asked (llama.cpp's server-decision, per type): which labels its answers are
 * read at, whether its template is given each option's label, and how a question becomes its prompts (tasks).
 */
export interface DecisionScheme {
  type: string
  /** The label codes to try, in order; those that are one token are used, by position. */
  codes: readonly string[]
  /** Every code must be one token (openjev's 52 letters), else only the single-token ones are used. */
  allCodes: boolean
  /** At most this many labels. */
  maxLabels: number
  /** A noul's options are [true, false] (else [false, true]). */
  noulTrueFirst: boolean
  /** Its template is given `options[].label`. */
  labelsOptions: boolean
  /** Every object in the template's input has its keys sorted (lev was trained so). */
  sortsKeys: boolean
  /** Its template is also given every question of the request (nimble). */
  givesQuestions: boolean
  /** A choice is asked twice, its options forward and reversed, and the two averaged (lev). */
  asksBothWays: boolean
  /** A noul is read as a 0-8 rating at the first nine labels (lev). */
  ratesNouls: boolean
  /**
   * Each question's labels are its own, each option read at a group of tokens (its forms, its highest logit):
   * LiquidAI's d1 (d1-labels.ts). A null state is then taken too.
   */
  groupsLabels?: boolean
}

const LETTERS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ'
const PAIRS = [...LETTERS].flatMap((a) => [...LETTERS].map((b) => a + b))
/** A..Z, then AA..ZZ: the codes lev, nimble and pplx-decider label options with. */
const CODES = [...LETTERS, ...PAIRS]
/** The ratings a lev noul is read at. */
export const LEV_RATINGS = 9

const LEV_LIKE = { codes: CODES, allCodes: false, maxLabels: 255, noulTrueFirst: false, labelsOptions: true, sortsKeys: false, givesQuestions: false, asksBothWays: false, ratesNouls: false }

/** The types whose answers are read from label logits, which this gateway computes through llama-server. */
export const SCHEMES: Readonly<Record<string, DecisionScheme>> = {
  openjev: { type: 'openjev', codes: [...LETTERS, ...LETTERS.toLowerCase()], allCodes: true, maxLabels: 52, noulTrueFirst: true, labelsOptions: false, sortsKeys: false, givesQuestions: false, asksBothWays: false, ratesNouls: false },
  lev: { ...LEV_LIKE, type: 'lev', sortsKeys: true, asksBothWays: true, ratesNouls: true },
  nimble: { ...LEV_LIKE, type: 'nimble', givesQuestions: true },
  'pplx-decider': { ...LEV_LIKE, type: 'pplx-decider' },
  'lfm2-d1': { type: 'lfm2-d1', codes: [], allCodes: false, maxLabels: 255, noulTrueFirst: true, labelsOptions: true, sortsKeys: false, givesQuestions: false, asksBothWays: false, ratesNouls: false, groupsLabels: true },
}

/** What the types that read an engine's head need, for their 501. */
export const NEEDS_ENGINE: Readonly<Record<string, string>> = {
  kev: 'a projection head over the options (tensors cls.output.*)',
  laya: 'an encoder with a decision head',
  clef: 'a joint head over all the questions in one sequence',
  'lfm2-d1-omni': 'an encoder with a decision head',
}

/** One prompt of a question: the options in the order shown (reversed for lev's second reading). */
export interface TaskPlan {
  question: DecisionQuestion
  /** 0: the options as sent; 1: reversed (lev's choice). */
  variant: 0 | 1
  shown: DecisionOption[]
  /** How many labels the answer is read at (a lev noul's nine ratings, else one per option). */
  outputs: number
}

/** The prompts each question takes, in order. */
export function taskPlans (scheme: Pick<DecisionScheme, 'asksBothWays' | 'ratesNouls'>, questions: readonly DecisionQuestion[]): TaskPlan[] {
  return questions.flatMap((question): TaskPlan[] => {
    const outputs = scheme.ratesNouls && question.type === 'noul' ? LEV_RATINGS : question.options.length
    const forward: TaskPlan = { question, variant: 0, shown: question.options, outputs }
    if (!(scheme.asksBothWays && question.type === 'choice' && question.options.length > 1)) return [forward]
    return [forward, { question, variant: 1, shown: [...question.options].reverse(), outputs }]
  })
}

/** The template's input for one task (llama.cpp's decision_template_input). */
export function templateInput (scheme: DecisionScheme, plan: TaskPlan, state: unknown, labels: readonly string[], all: readonly DecisionQuestion[]): Record<string, unknown> {
  const options = plan.shown.map((o, i) => scheme.labelsOptions ? { key: o.key, description: o.description, label: labels[i] } : { key: o.key, description: o.description })
  const input: Record<string, unknown> = { id: plan.question.id, type: plan.question.type, instructions: plan.question.instructions, state, options }
  if (scheme.givesQuestions) {
    input.questions = all.map((q) => ({
      id: q.id, type: q.type, instructions: q.instructions,
      options: q.options.map((o, i) => ({ key: o.key, description: o.description, label: labels[i] })),
    }))
  }
  const sorted = scheme.sortsKeys ? sortKeys(input) as Record<string, unknown> : input
  return { ...sorted, images: [] }
}

/** Every object's keys in order, at any depth (arrays keep theirs). */
export function sortKeys (value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys)
  if (typeof value !== 'object' || value === null) return value
  return Object.fromEntries(Object.keys(value).sort().map((k) => [k, sortKeys((value as Record<string, unknown>)[k])]))
}

/**
 * The probabilities of a task's shown options from its labels' probabilities: a lev noul's nine ratings become
 * [P(false), P(true)] with P(true) = Σ p_i·i/8, in the order of the question's options.
 */
export function shownProbabilities (plan: TaskPlan, p: readonly number[]): number[] {
  if (plan.question.type !== 'noul' || plan.outputs !== LEV_RATINGS) return [...p]
  const yes = p.reduce((sum, pi, i) => sum + pi * i / (LEV_RATINGS - 1), 0)
  return plan.question.options.map((o) => o.key === 'true' ? yes : 1 - yes)
}

/** A question's probabilities from its tasks: one, or lev's two readings averaged, each back in the options' order. */
export function averaged (tasks: ReadonlyArray<{ plan: TaskPlan, p: number[] }>): number[] {
  const n = tasks[0]!.p.length
  const sum = new Array<number>(n).fill(0)
  for (const { plan, p } of tasks) for (let i = 0; i < n; i++) sum[plan.variant === 0 ? i : n - 1 - i]! += p[i]! / tasks.length
  return sum
}
