import type { DecisionQuestion } from './decision-questions.js'

/** A text's token when it is one token of the model's vocabulary, else null. */
export type SingleToken = (text: string) => Promise<number | null>

/** The labels of one question for LiquidAI's d1: the text each option is shown with, and the tokens read for it. */
export interface D1Labels { texts: string[], groups: number[][] }

const UPPER = [...'ABCDEFGHIJKLMNOPQRSTUVWXYZ']
const LOWER = [...'abcdefghijklmnopqrstuvwxyz']
const two = (n: number): string => String(n).padStart(2, '0')
/** The codes a choice's label is taken from when its own is not one token, or is taken, in llama.cpp's order. */
const POOL = [
  ...UPPER, ...Array.from({ length: 100 }, (_, i) => two(i)), ...LOWER,
  ...Array.from({ length: 200 }, (_, i) => `#${i}`), ...UPPER.flatMap((a) => UPPER.map((b) => a + b)),
]

/**
 * d1's labels as llama.cpp's server gives them (server-decision's d1_labels, after the model's prompt.py): a noul
 * read at "yes"/"Yes"/"YES" and "no"/"No"/"NO", a score level at its digit, each a group of the forms that are one
 * token; a choice at its own keys when they are single letters, else A, B, ... (up to 26 options) or 00, 01, ...,
 * each code one token not taken before (else the next free code of the pool), read at the code and at the code after
 * a space. An option's score is its group's probability mass (d1 may answer "Yes" or " A" as well as "yes" or "A").
 * @throws Error when a noul's or a score's forms are none of them one token, or a choice runs out of codes
 */
export async function d1Labels (question: DecisionQuestion, single: SingleToken): Promise<D1Labels> {
  const forms = async (candidates: string[]): Promise<number[]> => {
    const out: number[] = []
    for (const form of candidates) {
      const token = await single(form)
      if (token !== null && !out.includes(token)) out.push(token)
    }
    return out
  }
  const texts: string[] = []
  const groups: number[][] = []
  if (question.type !== 'choice') {
    for (const option of question.options) {
      const group = question.type === 'score' ? await forms([option.key]) : option.key === 'true' ? await forms(['yes', 'Yes', 'YES']) : await forms(['no', 'No', 'NO'])
      if (group.length === 0) throw new Error(`decision label is not a single token: ${option.key}`)
      texts.push(option.key)
      groups.push(group)
    }
    return { texts, groups }
  }
  const n = question.options.length
  const letters = question.options.every((o) => /^[A-Za-z]$/.test(o.key))
  const codes = question.options.map((o, i) => letters ? o.key : n <= 26 ? UPPER[i]! : two(i))
  const used: number[] = []
  const take = async (code: string): Promise<boolean> => {
    const token = await single(code)
    if (token === null || used.includes(token)) return false
    used.push(token)
    const group = [token]
    for (const spaced of await forms([` ${code}`])) if (spaced !== token) group.push(spaced)
    texts.push(code)
    groups.push(group)
    return true
  }
  for (const code of codes) {
    let taken = await take(code)
    for (let i = 0; !taken && i < POOL.length; i++) taken = await take(POOL[i]!)
    if (!taken) throw new Error(`no single-token label left for ${n} options`)
  }
  return { texts, groups }
}
