import { execFileSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { join } from 'node:path'
import { Pool } from 'undici'
import { conversationAffinity } from '../../plugins/inference/conversation-affinity.js'
import { pickUpstream } from '../../plugins/upstreams/upstream-routing.js'
import type { RuntimeBuild } from '../../runtimes/index.js'
import { chatStream, prose, type ChatResult } from './bench-chat.js'
import { killAll, startGateway, type ServerShape, type Started } from './bench-setups.js'
import { percentile } from '../stats.js'

/**
 * The upstreams scenario: two back llamagates serving one model, behind fronts that list it once (prefix `pool/`).
 * 1. Conversations growing turn by turn through a front that routes by conversation prefix and one that routes in
 *    turns (round robin), each on conversations of its own: the backs' cached prompt tokens say how much of each
 *    prompt was already in the slot it landed on.
 * 2. The front's added time to first token: the same stream through the front and straight to a back, in turn,
 *    at 1 and at 8 streams at once; first with every process on every core, then with the front on a core of its
 *    own (taskset) and the backs, their runtime and this client on the others.
 */
export interface UpstreamsOptions {
  build: RuntimeBuild
  /** The model every back serves (the same file). */
  file: string
  dir: string
  conversations: number
  turns: number
  /** Words (about tokens) in each user message. */
  words: number
  /** Tokens in each answer. */
  reply: number
  /** Rounds of the time-to-first-token comparison, per level. */
  rounds: number
  /**
   * Untimed bursts of 8 streams each way before the comparison: a front serves for days, so its steady state is what
   * it adds, not its first thousand requests, while V8 still compiles its code (CPU per request ~1.4x then).
   */
  warmup: number
  threads?: number
  say: (line: string) => void
}

const MODEL = 'acme/chat'
const ROUTED = `pool/${MODEL}`
const MODES = ['prefix', 'round_robin'] as const
type Mode = (typeof MODES)[number]
const LEVELS = [1, 8]

export async function benchUpstreams (o: UpstreamsOptions): Promise<Record<string, unknown>> {
  const children: Started['child'][] = []
  const pools: Pool[] = []
  try {
    // A slot per stream of the widest level, each with room for a whole conversation (the tiny vocabulary takes
    // several tokens a word).
    const shape: ServerShape = { ctxPerSlot: o.turns * (o.words * 4 + o.reply + 40) + 1024, parallel: Math.max(...LEVELS), ...(o.threads !== undefined ? { threads: o.threads } : {}) }
    const backs = await Promise.all(['a', 'b'].map((name) => startGateway(join(o.dir, `back-${name}`), o.build, { [MODEL]: o.file }, shape)))
    children.push(...backs.map((b) => b.child))
    const upstreams = ['upstreams:', ...backs.map((b, i) => `  - { name: ${'ab'[i]}, url: "${b.url}", kind: llamagate, prefix: "pool/" }`)].join('\n')
    const fronts = Object.fromEntries(await Promise.all(MODES.map(async (mode) => {
      const front = await startGateway(join(o.dir, `front-${mode}`), o.build, {}, shape, { extra: [upstreams, `upstream_routing: ${mode}`] })
      children.push(front.child)
      return [mode, front] as const
    }))) as Record<Mode, Started>
    const pool = (url: string): Pool => { const p = new Pool(url, { connections: Math.max(...LEVELS) + 2 }); pools.push(p); return p }
    const frontPools = Object.fromEntries(MODES.map((m) => [m, pool(fronts[m].url)])) as Record<Mode, Pool>
    const backPools = backs.map((b) => pool(b.url))
    for (const mode of MODES) await listed(fronts[mode].url)
    // Loaded on both backs before anything is timed.
    for (const p of backPools) await must(chatStream(p, { model: MODEL, messages: [{ role: 'user', content: 'Hello.' }], max_tokens: 2 }), 'warm-up')

    o.say(`  ${o.conversations} conversations x ${o.turns} turns, ${o.words} words a message, ${o.reply} tokens an answer`)
    const cached: Record<Mode, { prompt: number, cached: number, followUps: number[] }> = {
      prefix: { prompt: 0, cached: 0, followUps: [] }, round_robin: { prompt: 0, cached: 0, followUps: [] },
    }
    for (const [m, mode] of MODES.entries()) {
      // Conversations of its own: neither front finds the other's in a back's cache.
      const histories = Array.from({ length: o.conversations }, (_, c) => [{ role: 'system', content: `You are assistant ${m}-${c}. ${prose(o.words, 7 + m * 100 + c)}` }])
      for (let turn = 0; turn < o.turns; turn++) {
        // The conversations' turns start in another order each time, as independent clients' would: in a fixed
        // order, round robin would hand conversation c the same back at every turn (c's place, modulo two).
        const order = shuffled(histories.map((_, c) => c), 31 * turn + m)
        const results = await Promise.all(order.map(async (c) => {
          const history = histories[c]!
          history.push({ role: 'user', content: `${prose(o.words, 1 + m * 100_000 + c * 1000 + turn)}\n\nWhat do you make of this?` })
          const result = await must(chatStream(frontPools[mode], { model: ROUTED, messages: history, max_tokens: o.reply, temperature: 0, ignore_eos: true }), `${mode}, conversation ${c}, turn ${turn}`)
          history.push({ role: 'assistant', content: result.text })
          return { c, result }
        })).then((done) => done.sort((x, y) => x.c - y.c).map((d) => d.result))
        for (const r of results) {
          cached[mode].prompt += r.promptTokens
          cached[mode].cached += r.cachedTokens
          if (turn > 0) cached[mode].followUps.push(r.cachedTokens / r.promptTokens)
        }
        o.say(`  ${mode} turn ${turn + 1}: ${results.map((r) => `${r.cachedTokens}/${r.promptTokens}`).join(' ')}`)
      }
    }
    const share = (mode: Mode): number => cached[mode].cached / cached[mode].prompt
    o.say(`  cached share of prompt tokens: prefix ${share('prefix').toFixed(3)}, round robin ${share('round_robin').toFixed(3)}, ratio ${(share('prefix') / share('round_robin')).toFixed(2)}`)

    // One short prompt, the same for every stream: through the front it goes to the back its prefix maps to, and
    // straight to that same back (the front's own routing, asked here).
    const body = { model: MODEL, messages: [{ role: 'user', content: prose(o.words, 424242) }], max_tokens: 4, temperature: 0, ignore_eos: true }
    const mapped = backPools[pickUpstream(['a', 'b'], 'prefix', { affinity: () => conversationAffinity(body) }, () => 0)]!
    const ttft: Record<string, Record<string, { direct_p50_ms: number, front_p50_ms: number, added_p50_ms: number }>> = {}
    const frontCpu: Record<string, number> = {}
    const compare = async (layout: string): Promise<void> => {
      ttft[layout] = {}
      const cpuBefore = cpuMs(fronts.prefix.child.pid!)
      let streams = 0
      for (const level of LEVELS) {
        const direct: number[] = []
        const front: number[] = []
        for (let round = 0; round < o.rounds; round++) {
          // In turn, first one then the other: neither always meets a machine the other just warmed.
          const order = round % 2 === 0 ? ['direct', 'front'] as const : ['front', 'direct'] as const
          for (const which of order) {
            const target = which === 'direct' ? mapped : frontPools.prefix
            const model = which === 'direct' ? MODEL : ROUTED
            const results = await Promise.all(Array.from({ length: level }, () => must(chatStream(target, { ...body, model }), `${which} at ${level}`)))
            ;(which === 'direct' ? direct : front).push(...results.map((r) => r.ttftMs))
            if (which === 'front') streams += level
          }
        }
        const d = percentile(direct, 50)
        const f = percentile(front, 50)
        ttft[layout][`streams_${level}`] = { direct_p50_ms: round3(d), front_p50_ms: round3(f), added_p50_ms: round3(f - d) }
        o.say(`  ${layout}: time to first token at ${level} stream(s), p50 of ${direct.length}: direct ${d.toFixed(2)} ms, through the front ${f.toFixed(2)} ms, added ${(f - d).toFixed(2)} ms`)
      }
      // What each relayed stream cost the front in CPU (user and system, /proc): the work its added time is made of.
      frontCpu[layout] = round3((cpuMs(fronts.prefix.child.pid!) - cpuBefore) / streams)
      o.say(`  ${layout}: the front's CPU per relayed stream ${frontCpu[layout]!.toFixed(2)} ms (${streams} streams)`)
    }
    for (let burst = 0; burst < o.warmup; burst++) {
      for (const [target, model] of [[mapped, MODEL], [frontPools.prefix, ROUTED]] as const) {
        await Promise.all(Array.from({ length: 8 }, () => must(chatStream(target, { ...body, model }), 'warm-up')))
      }
    }
    // Every process on every core, as they come: the front competes with the backs, their runtime and this client.
    await compare('shared_cores')
    // The front on a core of its own and everything else on the others, as a front on its own machine would be: what
    // it adds then is its own work, not the backs' share of the CPU it takes.
    const cores = availableParallelism()
    if (cores >= 2) {
      const rest = cores === 2 ? '0' : `0-${cores - 2}`
      for (const pid of [process.pid, ...backs.flatMap((b) => processTree(b.child.pid!))]) pin(pid, rest)
      for (const pid of processTree(fronts.prefix.child.pid!)) pin(pid, String(cores - 1))
      try {
        await compare('front_on_its_own_core')
      } finally {
        pin(process.pid, `0-${cores - 1}`)
      }
    }
    return {
      model: 'tiny random-weight llama (64 x 2 layers), the same file on both backs',
      ttft_warmup_bursts: o.warmup,
      conversations: o.conversations, turns: o.turns, words: o.words, reply: o.reply, parallel_per_back: shape.parallel,
      cached: Object.fromEntries(MODES.map((mode) => [mode, {
        prompt_tokens: cached[mode].prompt, cached_tokens: cached[mode].cached, cached_share: round3(share(mode)),
        follow_up_cached_share_p50: round3(percentile(cached[mode].followUps, 50)),
      }])),
      cached_share_ratio: round3(share('prefix') / share('round_robin')),
      ttft,
      front_cpu_ms_per_stream: frontCpu,
    }
  } finally {
    await Promise.all(pools.map((p) => p.close()))
    killAll(children)
  }
}

/** `items` in an order drawn from `seed` (Fisher-Yates over a linear congruential generator): the same in every run. */
function shuffled<T> (items: T[], seed: number): T[] {
  const out = [...items]
  let state = seed >>> 0
  for (let i = out.length - 1; i > 0; i--) {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0
    const j = (state >>> 16) % (i + 1)
    ;[out[i], out[j]] = [out[j]!, out[i]!]
  }
  return out
}

/** The CPU time `pid` has used, user and system (ms, at the kernel's 10 ms tick). */
function cpuMs (pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
  return (Number(fields[11]) + Number(fields[12])) * 10
}

/** Every thread of `pid` on `cores` (taskset's list form); its children started later inherit it. */
function pin (pid: number, cores: string): void {
  execFileSync('taskset', ['-a', '-p', '-c', cores, String(pid)], { stdio: 'ignore' })
}

/** `pid` and its descendants (a gateway and the llama-servers it started), from /proc. */
function processTree (pid: number): number[] {
  const children = readdirSync(`/proc/${pid}/task`).flatMap((tid) =>
    readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').split(' ').filter((c) => c !== '').map(Number))
  return [pid, ...children.flatMap(processTree)]
}

function round3 (n: number): number { return Math.round(n * 1000) / 1000 }

async function must (pending: Promise<ChatResult>, what: string): Promise<ChatResult> {
  const result = await pending
  if (!result.ok || result.ttftMs < 0) throw new Error(`${what}: ${result.error ?? 'no text in the answer'}`)
  return result
}

/** Waits for the front's probes to have listed the backs' model (they probe at once on start). */
async function listed (url: string): Promise<void> {
  const deadline = Date.now() + 30_000
  while (Date.now() < deadline) {
    const tags = await fetch(`${url}/api/tags`).then(async (r) => await r.text()).catch(() => '')
    if (tags.includes(ROUTED)) return
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error(`${url} never listed ${ROUTED}`)
}
