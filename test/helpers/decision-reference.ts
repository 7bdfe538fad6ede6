import { Template } from '@huggingface/jinja'
import { Agent, fetch } from 'undici'
import { readGgufHeader } from '../../core/base/gguf-header.js'
import { withBareServer } from './bare-llama-server.js'

/** A System One question as a test writes it. */
export interface RefQuestion { type: 'choice' | 'score' | 'noul', instructions: string, criteria?: unknown }

/** What the reference reads a fixture's question at: its labels' logits, and the temperature the test expects. */
export interface RefTask { prompt: string, labels: string[] }

const LETTERS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ'

/**
 * llama.cpp's decision answers computed apart from the gateway, for the tests: each question's prompt rendered from
 * the model file's own template with the inputs llama.cpp gives it, evaluated by a bare llama-server of the test
 * runtime in the order the request asks them, and every label's raw logit read from the whole vocabulary's
 * log-probabilities (no bias, no sampler):
 * p = softmax(s / T) at the temperature the test names, lev's two readings averaged, its noul a rating.
 */
export async function referenceProbabilities (file: string, type: 'openjev' | 'lev' | 'lfm2-d1', state: unknown, questions: Record<string, RefQuestion>, temperatures: Record<string, number>): Promise<Record<string, number[]>> {
  const { metadata } = await readGgufHeader(file, { maxArrayLength: 0 })
  const template = new Template(metadata['tokenizer.chat_template.systemone'] as string)
  return withBareServer(file, ['--ctx-size', '2048'], async ({ base }) => {
    // A connection each: llama-server closes one idle for 5 s, and a busy machine's pauses are longer.
    const fresh = new Agent({ pipelining: 0 })
    const post = async (path: string, body: unknown): Promise<any> => (await fetch(`${base}${path}`, { method: 'POST', body: JSON.stringify(body), dispatcher: fresh })).json()
    const tokenOrNull = async (text: string): Promise<number | null> => {
      const { tokens } = await post('/tokenize', { content: text, add_special: false, parse_special: false })
      return tokens.length === 1 ? tokens[0] : null
    }
    const token = async (text: string): Promise<number> => {
      const id = await tokenOrNull(text)
      if (id === null) throw new Error(`label ${text} is not one token`)
      return id
    }
    // The request's prompts in its order, the first read whole and the others from the cache it left, as the
    // engine evaluates them (its logits move by ~1e-4 with where a prompt's batches are cut).
    let first = true
    // Each label a group of forms (d1's; one form for the others): its logit the highest of theirs that are one token.
    const logits = async (prompt: string, labels: string[][]): Promise<number[]> => {
      const { tokens } = await post('/tokenize', { content: prompt, add_special: false, parse_special: true })
      const answer = await post('/completion', { prompt: tokens, n_predict: 1, n_probs: 200_000, post_sampling_probs: false, cache_prompt: !first })
      first = false
      const all = new Map<number, number>(answer.completion_probabilities[0].top_logprobs.map((e: any) => [e.id, e.logprob]))
      return Promise.all(labels.map(async (forms) => {
        if (forms.length === 1) return all.get(await token(forms[0]!))!
        const ids = (await Promise.all(forms.map(tokenOrNull))).filter((id): id is number => id !== null)
        return Math.max(...ids.map((id) => all.get(id)!))
      }))
    }
    const out: Record<string, number[]> = {}
    for (const [id, q] of Object.entries(questions)) {
      const keys = q.type === 'choice' ? Object.keys(q.criteria as object) : q.type === 'score' ? (q.criteria as unknown[]).map((_, i) => String(i)) : type === 'lev' ? ['false', 'true'] : ['true', 'false']
      const descriptions = keys.map((k, i) => q.type === 'choice' ? (q.criteria as Record<string, unknown>)[k] ?? null : q.type === 'score' ? (q.criteria as unknown[])[i] : null)
      const T = temperatures[id]!
      const read = async (order: number[]): Promise<number[]> => {
        // d1 (the test's choices have keys that are no single letters, at most 26): a choice lettered, a noul and a
        // score labelled by their keys, read at yes/no forms and digits.
        const d1Label = (o: number, i: number): string => q.type === 'choice' ? LETTERS[i]! : keys[o]!
        const options = order.map((o, i) => type === 'lev' ? { description: descriptions[o], key: keys[o], label: LETTERS[i] }
          : type === 'lfm2-d1' ? { key: keys[o], description: descriptions[o], label: d1Label(o, i) } : { key: keys[o], description: descriptions[o] })
        const input = { id, type: q.type, instructions: q.instructions, state, options }
        const prompt = template.render({ ...(type === 'lev' ? sorted(input) as object : input), images: [] })
        const n = type === 'lev' && q.type === 'noul' ? 9 : keys.length
        const groups = type !== 'lfm2-d1' ? [...LETTERS.slice(0, n)].map((l) => [l])
          : order.map((o, i) => q.type === 'noul' ? (keys[o] === 'true' ? ['yes', 'Yes', 'YES'] : ['no', 'No', 'NO']) : q.type === 'score' ? [keys[o]!] : [d1Label(o, i), ` ${d1Label(o, i)}`])
        const s = await logits(prompt, groups)
        const max = Math.max(...s)
        const e = s.map((x) => Math.exp((x - max) / T))
        const sum = e.reduce((a, b) => a + b, 0)
        return e.map((x) => x / sum)
      }
      const forward = keys.map((_, i) => i)
      if (type === 'lev' && q.type === 'noul') {
        const r = await read(forward)
        const yes = r.reduce((sum, p, i) => sum + p * i / 8, 0)
        out[id] = [1 - yes, yes]
      } else if (type === 'lev' && q.type === 'choice') {
        const a = await read(forward)
        const b = await read([...forward].reverse())
        out[id] = a.map((p, i) => (p + b[a.length - 1 - i]!) / 2)
      } else {
        out[id] = await read(forward)
      }
    }
    await fresh.close()
    return out
  })
}

function sorted (value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sorted)
  if (typeof value !== 'object' || value === null) return value
  return Object.fromEntries(Object.keys(value).sort().map((k) => [k, sorted((value as Record<string, unknown>)[k])]))
}
