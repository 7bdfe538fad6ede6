import { readFile } from 'node:fs/promises'
import { CLIENT_FLAGS, CLIENT_OPTIONS, JSON_FLAG, JSON_OPTION, UsageError, type Command } from '../../core/cli/commands/command.js'
import type { SystemOneAnswer } from './decision-math.js'

interface Reply { model: string, answers: Record<string, SystemOneAnswer>, usage: { input_tokens: number } }
type Asked = { type: 'noul' | 'choice' | 'score', instructions: string, criteria?: unknown }

const BAR_WIDTH = 24

/**
 * `llamagate decide`: asks a decision model (or a chat model) questions about a state, as `/v1/systemone` takes them,
 * and prints each answer with a bar per probability.
 */
export const decideCommand: Command = {
  name: 'decide',
  summary: 'ask a decision model yes/no, choice and score questions about a text, with the probabilities',
  usage: [
    'llamagate decide <model> <state | -> [--yes-no QUESTION] [--choice QUESTION=A,B,...] [--score QUESTION=LOW,...,HIGH]',
    'llamagate decide <model> --request FILE   (a /v1/systemone body: {"state", "questions"}; - reads standard input)',
  ],
  flags: [
    '--yes-no TEXT             a true/false question (repeatable)',
    '--choice TEXT=A,B,...     one of the options after "=" (repeatable)',
    '--score TEXT=L0,L1,...    a level from the first (0) to the last (repeatable)',
    '--request FILE            the whole request as JSON (- : standard input)',
    JSON_FLAG,
    ...CLIENT_FLAGS,
  ],
  options: {
    ...CLIENT_OPTIONS, ...JSON_OPTION,
    'yes-no': { type: 'string', multiple: true }, choice: { type: 'string', multiple: true }, score: { type: 'string', multiple: true },
    request: { type: 'string' },
  },
  positionals: { min: 1, max: 2 },
  positionalsHint: 'expected a model name and the state (a text, or - for standard input)',
  async run ({ values, positionals, stdout, stdin, client }) {
    const [model, state] = positionals as [string, string | undefined]
    const body = typeof values.request === 'string'
      ? JSON.parse(await readText(values.request, stdin)) as Record<string, unknown>
      : { state: state === undefined ? undefined : state === '-' ? await readText('-', stdin) : state, questions: questionsOf(values) }
    if (body.state === undefined) throw new UsageError('give the state: a text, - for standard input, or --request FILE')
    const reply = await client().json<Reply>('POST', '/v1/systemone', { ...body, model })
    if (values.json) { stdout.write(`${JSON.stringify(reply, null, 2)}\n`); return 0 }
    const questions = (body.questions ?? {}) as Record<string, Asked>
    for (const [id, answer] of Object.entries(reply.answers)) stdout.write(describe(id, questions[id]?.instructions ?? id, answer))
    stdout.write(`(${reply.model}, ${reply.usage.input_tokens} prompt tokens)\n`)
    return 0
  },
}

/** The questions the flags ask, `q1`, `q2`... in the order given by kind. */
function questionsOf (values: Record<string, unknown>): Record<string, Asked> {
  const asked: Asked[] = []
  const list = (v: unknown): string[] => Array.isArray(v) ? v.map(String) : []
  for (const text of list(values['yes-no'])) asked.push({ type: 'noul', instructions: text })
  for (const [kind, flag] of [['choice', 'choice'], ['score', 'score']] as const) {
    for (const spec of list(values[flag])) {
      const at = spec.lastIndexOf('=')
      const options = at === -1 ? [] : spec.slice(at + 1).split(',').map((o) => o.trim()).filter((o) => o !== '')
      if (options.length < 2) throw new UsageError(`--${flag} "${spec}": give the question, "=", and at least two options separated by commas`)
      const instructions = spec.slice(0, at).trim()
      asked.push(kind === 'choice' ? { type: 'choice', instructions, criteria: Object.fromEntries(options.map((o) => [o, null])) } : { type: 'score', instructions, criteria: options })
    }
  }
  if (asked.length === 0) throw new UsageError('ask at least one question: --yes-no, --choice or --score (or --request FILE)')
  return Object.fromEntries(asked.map((q, i) => [`q${i + 1}`, q]))
}

/** One answer: its question, the verdict, and a bar for each probability. */
export function describe (id: string, instructions: unknown, answer: SystemOneAnswer): string {
  const title = typeof instructions === 'string' ? instructions : JSON.stringify(instructions)
  const rows: Array<[string, number]> = answer.type === 'noul'
    ? [['yes', answer.noul], ['no', 1 - answer.noul]]
    : Object.entries(answer.probabilities).map(([key, p]) => [answer.type === 'score' ? `${key} ${String(answer.legend[key] ?? '')}`.trim() : key, p])
  const verdict = answer.type === 'noul' ? (answer.noul >= 0.5 ? 'yes' : 'no')
    : answer.type === 'choice' ? answer.choice : `${answer.score.toFixed(2)} of ${rows.length - 1}`
  const confidence = answer.type === 'noul' ? '' : `, confidence ${answer.confidence.toFixed(2)}`
  const width = Math.max(...rows.map(([label]) => label.length))
  const lines = rows.map(([label, p]) => `    ${label.padEnd(width)}  ${p.toFixed(3)}  ${bar(p)}`)
  return `${id}: ${title}\n  → ${verdict}${confidence}\n${lines.join('\n')}\n`
}

/** A bar of eighths, as wide as the probability of BAR_WIDTH. */
function bar (p: number): string {
  const eighths = Math.round(Math.min(1, Math.max(0, p)) * BAR_WIDTH * 8)
  return '█'.repeat(Math.floor(eighths / 8)) + (eighths % 8 === 0 ? '' : '▏▎▍▌▋▊▉'[eighths % 8 - 1]!)
}

async function readText (file: string, stdin: NodeJS.ReadStream): Promise<string> {
  if (file !== '-') return readFile(file, 'utf8')
  let text = ''
  for await (const chunk of stdin) text += String(chunk)
  return text
}
