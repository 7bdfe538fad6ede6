import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { hashSecret } from '../../plugins/security/keys-file.js'
import type { RuntimeBuild } from '../../runtimes/index.js'
import { prose } from './bench-chat.js'
import { killAll, startGateway, type ServerShape } from './bench-setups.js'

/**
 * The cache-groups scenario: what keeping keys' prompt caches apart costs a key's cache hit rate. Key A
 * runs `conversations` conversations of `turns` turns each, in turn, all with one agent's system prompt
 * (`systemWords`); in the runs with B, key B runs as many of its own, with the same system prompt, a request of B
 * after each of A's. Four runs, each on a fresh gateway: keys off; A alone with keys on (A a group of its own); A and
 * B in two groups; A and B in one. The figure is A's cached share of its prompt tokens, from its answers' usage.
 */
export interface CacheGroupsOptions {
  build: RuntimeBuild
  file: string
  dir: string
  conversations: number
  turns: number
  /** Words in each user message. */
  words: number
  /** Words of the system prompt every conversation starts with. */
  systemWords: number
  reply: number
  threads?: number
  say: (line: string) => void
}

const MODEL = 'acme/chat'
const RUNS = ['keys off', 'A alone, keys on', 'A and B, two groups', 'A and B, one group'] as const
type Run = (typeof RUNS)[number]
const SECRETS = { a: 'lg-bench-a-0123456789abcdef0123456789', b: 'lg-bench-b-0123456789abcdef0123456789' }

interface Share { requests: number, prompt: number, cached: number, share: number }

export async function benchCacheGroups (o: CacheGroupsOptions): Promise<Record<string, unknown>> {
  const system = prose(o.systemWords, 7)
  // Room for a whole conversation in a slot (the tiny vocabulary takes several tokens a word).
  const shape: ServerShape = { ctxPerSlot: (o.systemWords + o.turns * (o.words + o.reply)) * 4 + 1024, parallel: 2, ...(o.threads !== undefined ? { threads: o.threads } : {}) }
  const results: Partial<Record<Run, { a: Share, b?: Share }>> = {}
  for (const run of RUNS) {
    const dir = join(o.dir, run.replace(/[^a-z]+/gi, '-'))
    await mkdir(dir, { recursive: true })
    const keys = run === 'keys off' ? [] : [`auth: { keys_file: ${join(dir, 'keys.yaml')} }`]
    if (run !== 'keys off') {
      const group = run === 'A and B, one group' ? ', cache_group: team' : ''
      await writeFile(join(dir, 'keys.yaml'), `keys:\n${Object.entries(SECRETS).map(([name, secret]) =>
        `  - { name: ${name}, hash: "${hashSecret(secret)}", scopes: [infer], models: ["*"], limits: {}, created: "2026-01-01T00:00:00Z"${group} }`).join('\n')}\n`)
    }
    const started = await startGateway(dir, o.build, { [MODEL]: o.file }, shape, { extra: keys })
    try {
      const withB = run.startsWith('A and B')
      const talk = { a: newConversations(o.conversations), b: newConversations(o.conversations) }
      const shares = { a: { requests: 0, prompt: 0, cached: 0, share: 0 }, b: { requests: 0, prompt: 0, cached: 0, share: 0 } }
      for (let turn = 0; turn < o.turns; turn++) {
        for (let c = 0; c < o.conversations; c++) {
          for (const who of withB ? ['a', 'b'] as const : ['a'] as const) {
            const messages = talk[who][c]!
            messages.push({ role: 'user', content: prose(o.words, (who === 'a' ? 1 : 1000) + c * 100 + turn) })
            const answer = await ask(started.url, run === 'keys off' ? null : SECRETS[who], [{ role: 'system', content: system }, ...messages], o.reply)
            messages.push({ role: 'assistant', content: answer.text })
            const counts = shares[who]
            counts.requests++
            counts.prompt += answer.prompt
            counts.cached += answer.cached
          }
        }
      }
      for (const counts of Object.values(shares)) counts.share = counts.prompt === 0 ? 0 : Number((counts.cached / counts.prompt).toFixed(3))
      results[run] = withB ? shares : { a: shares.a }
      const b = withB ? `; B's ${shares.b.share.toFixed(3)} (${shares.b.cached} of ${shares.b.prompt})` : ''
      o.say(`${run.padEnd(22)} A's cached share ${shares.a.share.toFixed(3)} (${shares.a.cached} of ${shares.a.prompt} prompt tokens, ${shares.a.requests} requests)${b}`)
    } finally {
      killAll([started.child])
    }
  }
  const share = (run: Run, who: 'a' | 'b' = 'a'): number => results[run]![who]!.share
  const summary = {
    single_key_cost: Number((share('keys off') - share('A alone, keys on')).toFixed(3)),
    two_groups_cost_a: Number((share('A and B, one group') - share('A and B, two groups')).toFixed(3)),
    two_groups_cost_b: Number((share('A and B, one group', 'b') - share('A and B, two groups', 'b')).toFixed(3)),
  }
  o.say(`keys on cost A alone ${summary.single_key_cost} of its cached share; beside B, two groups instead of one cost A ${summary.two_groups_cost_a} and B ${summary.two_groups_cost_b}`)
  return { conversations: o.conversations, turns: o.turns, words: o.words, system_words: o.systemWords, reply: o.reply, parallel: shape.parallel, runs: results, ...summary }
}

function newConversations (count: number): Array<Array<{ role: string, content: string }>> {
  return Array.from({ length: count }, () => [])
}

async function ask (url: string, secret: string | null, messages: Array<{ role: string, content: string }>, reply: number): Promise<{ text: string, prompt: number, cached: number }> {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(secret !== null ? { authorization: `Bearer ${secret}` } : {}) },
    body: JSON.stringify({ model: MODEL, messages, max_tokens: reply, temperature: 0, ignore_eos: true }),
  })
  const body = await res.json() as { choices?: Array<{ message?: { content?: string } }>, usage?: { prompt_tokens?: number, prompt_tokens_details?: { cached_tokens?: number } }, error?: unknown }
  if (res.status !== 200) throw new Error(`the gateway answered ${res.status}: ${JSON.stringify(body.error)}`)
  return { text: body.choices?.[0]?.message?.content ?? '', prompt: body.usage?.prompt_tokens ?? 0, cached: body.usage?.prompt_tokens_details?.cached_tokens ?? 0 }
}
