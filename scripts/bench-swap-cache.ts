import { rename } from 'node:fs/promises'
import { join } from 'node:path'
import { Pool } from 'undici'
import { LlamaServer } from '../runtimes/process/llama-server.js'
import type { RuntimeBuild } from '../runtimes/types.js'
import { chatStream, prose, type ChatResult } from './bench-chat.js'
import { killAll, routerModelsDir, startGateway, startRouter, type ServerShape, type Started } from './bench-setups.js'
import { percentile } from './stats.js'

/**
 * The swap-cache scenario: an agent's long shared prefix (system prompt, tools, the conversation so far) on two
 * models that do not fit together. Four conversations share the prefix; between their turns another model is
 * asked for, which swaps the first one out. Timed: a follow-up's first token after its model came back, through
 * llamagate with its prompt caches, llamagate without, llama-server's router (`--models-max 1`) and "restart"
 * (stop llama-server, start it on the other model). Then llamagate with caches is restarted itself, and timed again.
 */

const SETUPS = ['caches', 'no-caches', 'router', 'restart'] as const
type Setup = (typeof SETUPS)[number]
type Message = { role: string, content: string }

export interface SwapCacheOptions {
  build: RuntimeBuild
  /** The model the conversations talk to, and the one asked for in between. */
  models: [{ label: string, file: string }, { label: string, file: string }]
  dir: string
  /** Words of the shared prefix (about 1.3 tokens each). */
  prefixWords: number
  /** How many times the model comes back; each time one conversation's follow-up is timed. */
  swapIns: number
  threads?: number
  /**
   * llama-server's --flash-attn in every setup. On CPU its kernel answers a prompt differently as the prompt is cut into
   * batches, and a follow-up from a context checkpoint is another cut: off, a reuse answers as a cold evaluation does.
   */
  flashAttn?: 'on' | 'off' | 'auto'
  say: (line: string) => void
}

const CONVERSATIONS = 4
const REPLY = 8

export async function benchSwapCache (o: SwapCacheOptions): Promise<Record<string, unknown>> {
  const [a, b] = o.models
  const extraArgs = o.flashAttn !== undefined ? ['--flash-attn', o.flashAttn] : []
  const shape: ServerShape = { ctxPerSlot: Math.ceil(o.prefixWords * 1.6) + 1024, parallel: CONVERSATIONS, ...(o.threads !== undefined ? { threads: o.threads } : {}), extraArgs }
  const children: Started['child'][] = []
  let restarted: LlamaServer | null = null
  const restartOn = async (file: string): Promise<Pool> => {
    await restarted?.stop()
    restarted = new LlamaServer({ build: o.build, modelPath: file, alias: 'bench', ctxSize: shape.ctxPerSlot * shape.parallel, parallel: shape.parallel, ...(o.threads !== undefined ? { threads: o.threads } : {}), extraArgs })
    await restarted.start()
    return new Pool(restarted.endpoint.address.baseUrl, { connections: 1 })
  }
  const gatewayModels = { [`bench/${a.label}`]: a.file, [`bench/${b.label}`]: b.file }
  try {
    const withCaches = await startGateway(join(o.dir, 'caches'), o.build, gatewayModels, shape, { maxLoaded: 1 })
    children.push(withCaches.child)
    const withoutCaches = await startGateway(join(o.dir, 'no-caches'), o.build, gatewayModels, shape, { maxLoaded: 1, extra: ['prompt_cache: { enabled: false }'] })
    children.push(withoutCaches.child)
    const router = await startRouter(o.build, await routerModelsDir(join(o.dir, 'router-models'), { [a.label]: a.file, [b.label]: b.file }), shape, 1)
    children.push(router.child)
    const pools: Record<Exclude<Setup, 'restart'>, Pool> = { caches: new Pool(withCaches.url, { connections: CONVERSATIONS }), 'no-caches': new Pool(withoutCaches.url, { connections: CONVERSATIONS }), router: new Pool(router.url, { connections: CONVERSATIONS }) }
    let restartPool: Pool | null = null
    let restartModel: 0 | 1 | null = null

    /** One turn of `model` through `setup`; the restart setup restarts llama-server when the model changes. */
    const send = async (setup: Setup, model: 0 | 1, messages: Message[]): Promise<ChatResult> => {
      const { label } = o.models[model]
      const body = { messages, max_tokens: REPLY, temperature: 0, ignore_eos: true }
      let result: ChatResult
      if (setup === 'restart') {
        if (restartModel !== model) { await restartPool?.close(); restartPool = await restartOn(o.models[model].file); restartModel = model }
        result = await chatStream(restartPool!, { ...body, model: 'bench' })
      } else {
        result = await chatStream(pools[setup], { ...body, model: setup === 'router' ? label : `bench/${label}` })
      }
      if (!result.ok || result.ttftMs < 0) throw new Error(`${setup}, ${label}: ${result.error ?? 'no text in the answer'}`)
      return result
    }
    const system = `You are a coding agent. ${prose(o.prefixWords, 7)}`
    const histories = Object.fromEntries(SETUPS.map((s) => [s, Array.from({ length: CONVERSATIONS }, (_, c) => [
      { role: 'system', content: system }, { role: 'user', content: `Task ${c + 1}: ${prose(40, 100 + c)}` },
    ] as Message[])])) as Record<Setup, Message[][]>
    const turn = async (setup: Setup, conversation: number): Promise<ChatResult> => {
      const history = histories[setup][conversation]!
      const result = await send(setup, 0, history)
      history.push({ role: 'assistant', content: result.text }, { role: 'user', content: `Next: ${prose(20, 200 + history.length + conversation * 50)}` })
      return result
    }

    // Each setup starts with every conversation's first turn (the prefix evaluated once, then shared).
    const first: Record<Setup, ChatResult[]> = { caches: [], 'no-caches': [], router: [], restart: [] }
    for (const setup of SETUPS) {
      for (let c = 0; c < CONVERSATIONS; c++) first[setup].push(await turn(setup, c))
      o.say(`  ${setup}: first turns ${first[setup].map((r) => `${(r.ttftMs / 1000).toFixed(1)} s (${r.cachedTokens}/${r.promptTokens} cached)`).join(', ')}`)
    }
    const followUps: Record<Setup, ChatResult[]> = { caches: [], 'no-caches': [], router: [], restart: [] }
    const answers: Record<Setup, string[]> = { caches: [], 'no-caches': [], router: [], restart: [] }
    for (let i = 0; i < o.swapIns; i++) {
      const conversation = i % CONVERSATIONS
      for (let k = 0; k < SETUPS.length; k++) {
        const setup = SETUPS[(i + k) % SETUPS.length]!
        await send(setup, 1, [{ role: 'user', content: 'Say hello.' }]) // the other model: the first one goes
        const result = await turn(setup, conversation)
        followUps[setup].push(result)
        answers[setup].push(result.text)
      }
      o.say(`  swap-in ${i + 1} (conversation ${conversation + 1}): ${SETUPS.map((s) => `${s} ${(followUps[s].at(-1)!.ttftMs / 1000).toFixed(2)} s (${followUps[s].at(-1)!.cachedTokens}/${followUps[s].at(-1)!.promptTokens})`).join('; ')}`)
    }

    // llamagate with caches, restarted (SIGTERM: its runtimes save as they stop), then the next follow-ups.
    withCaches.child.kill('SIGTERM')
    await new Promise((resolve) => withCaches.child.once('exit', resolve))
    await pools.caches.close()
    // The new process's log is read for its address: the old one's must not answer for it.
    await rename(join(o.dir, 'caches', 'llamagate.log'), join(o.dir, 'caches', 'llamagate-before-restart.log'))
    const again = await startGateway(join(o.dir, 'caches'), o.build, {}, shape, { maxLoaded: 1, argsFor: Object.keys(gatewayModels) })
    children.push(again.child)
    pools.caches = new Pool(again.url, { connections: CONVERSATIONS })
    const afterRestart: ChatResult[] = []
    for (let c = 0; c < CONVERSATIONS; c++) {
      const history = histories.caches[c]!
      const result = await send('caches', 0, history)
      history.push({ role: 'assistant', content: result.text })
      afterRestart.push(result)
    }
    o.say(`  caches after a gateway restart: ${afterRestart.map((r) => `${(r.ttftMs / 1000).toFixed(2)} s (${r.cachedTokens}/${r.promptTokens})`).join(', ')}`)
    await Promise.all(Object.values(pools).map((p) => p.close()))
    await (restartPool as Pool | null)?.close()

    const summary = Object.fromEntries(SETUPS.map((setup) => [setup, {
      follow_up_ttft_p50_ms: percentile(followUps[setup].map((r) => r.ttftMs), 50),
      follow_up_cached_p50: percentile(followUps[setup].map((r) => r.cachedTokens), 50),
      prompt_tokens_p50: percentile(followUps[setup].map((r) => r.promptTokens), 50),
      follow_up_ttft_ms: followUps[setup].map((r) => Math.round(r.ttftMs)),
    }])) as Record<Setup, { follow_up_ttft_p50_ms: number, follow_up_cached_p50: number, prompt_tokens_p50: number, follow_up_ttft_ms: number[] }>
    const best = Math.min(summary['no-caches'].follow_up_ttft_p50_ms, summary.router.follow_up_ttft_p50_ms, summary.restart.follow_up_ttft_p50_ms)
    const ratio = summary.caches.follow_up_ttft_p50_ms / best
    const restartRatio = percentile(afterRestart.map((r) => r.ttftMs), 50) / best
    const same = answers.caches.filter((text, i) => text === answers['no-caches'][i]).length
    o.say(`\nswap-cache (${a.label} ⇄ ${b.label}, room for one; ${CONVERSATIONS} conversations sharing a ~${summary.caches.prompt_tokens_p50}-token prompt; ${o.swapIns} swap-ins): follow-up TTFT after the model came back, medians`)
    for (const setup of SETUPS) {
      const s = summary[setup]
      o.say(`${setup.padEnd(10)} ${(s.follow_up_ttft_p50_ms / 1000).toFixed(2).padStart(8)} s   ${s.follow_up_cached_p50} of ${s.prompt_tokens_p50} prompt tokens from cache`)
    }
    o.say(`caches / the best of the others: ${ratio.toFixed(4)} (target ≤ 0.1); after a gateway restart: ${restartRatio.toFixed(4)}`)
    o.say(`answers at temperature 0 identical with and without the restore: ${same} of ${answers.caches.length}`)
    return {
      models: [a.label, b.label], conversations: CONVERSATIONS, swap_ins: o.swapIns, prefix_words: o.prefixWords, ...summary,
      first_turn_ttft_ms: Object.fromEntries(SETUPS.map((s) => [s, first[s].map((r) => Math.round(r.ttftMs))])),
      after_restart: afterRestart.map((r) => ({ ttft_ms: Math.round(r.ttftMs), cached: r.cachedTokens, prompt: r.promptTokens })),
      ratio_vs_best_other: ratio, after_restart_ratio_vs_best_other: restartRatio, identical_answers: same, answers_compared: answers.caches.length,
    }
  } finally {
    await (restarted as LlamaServer | null)?.stop()
    killAll(children)
    await new Promise((r) => setTimeout(r, 1000))
  }
}
