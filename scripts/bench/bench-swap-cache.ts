import { rename } from 'node:fs/promises'
import { join } from 'node:path'
import { Pool } from 'undici'
import { LlamaServer } from '../../runtimes/process/llama-server.js'
import type { RuntimeBuild } from '../../runtimes/types.js'
import { chatStream, prose, type ChatResult } from './bench-chat.js'
import { killAll, routerModelsDir, startGateway, startRouter, type ServerShape, type Started } from './bench-setups.js'
import { percentile } from '../stats.js'

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
   * llama-server's --flash-attn in every setup (unset: its default). On CPU its kernel answers a prompt differently as
   * the prompt is cut into batches, and a follow-up from a cache is another cut than a cold evaluation's.
   */
  flashAttn?: 'on' | 'off' | 'auto'
  /**
   * llama-server's weight repacking in every setup (unset: on). Its repacked k-quant kernels (Q4_K on x86) take another
   * path for a row than for a batch. Both off, every cut gives the same logprobs to the last digit.
   */
  repack?: boolean
  say: (line: string) => void
}

const CONVERSATIONS = 4
const REPLY = 8

export async function benchSwapCache (o: SwapCacheOptions): Promise<Record<string, unknown>> {
  const [a, b] = o.models
  const extraArgs = [...o.flashAttn !== undefined ? ['--flash-attn', o.flashAttn] : [], ...o.repack === false ? ['--no-repack'] : []]
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
      const body = { messages, max_tokens: REPLY, temperature: 0, ignore_eos: true, logprobs: true, top_logprobs: 2 }
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
    for (let i = 0; i < o.swapIns; i++) {
      const conversation = i % CONVERSATIONS
      for (let k = 0; k < SETUPS.length; k++) {
        const setup = SETUPS[(i + k) % SETUPS.length]!
        await send(setup, 1, [{ role: 'user', content: 'Say hello.' }]) // the other model: the first one goes
        const result = await turn(setup, conversation)
        followUps[setup].push(result)
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
    const agreement = compareAnswers(followUps)
    o.say(`\nswap-cache (${a.label} ⇄ ${b.label}, room for one; ${CONVERSATIONS} conversations sharing a ~${summary.caches.prompt_tokens_p50}-token prompt; ${o.swapIns} swap-ins): follow-up TTFT after the model came back, medians`)
    for (const setup of SETUPS) {
      const s = summary[setup]
      o.say(`${setup.padEnd(10)} ${(s.follow_up_ttft_p50_ms / 1000).toFixed(2).padStart(8)} s   ${s.follow_up_cached_p50} of ${s.prompt_tokens_p50} prompt tokens from cache`)
    }
    o.say(`caches / the best of the others: ${ratio.toFixed(4)} (target ≤ 0.1); after a gateway restart: ${restartRatio.toFixed(4)}`)
    o.say(`answers at temperature 0 identical to every cold setup's (${COLD.join(', ')}): ${agreement.identical} of ${o.swapIns}; largest logprob difference: top-1 ${agreement.maxTopDiff.toExponential(2)}, runner-up ${agreement.maxRunnerUpDiff.toExponential(2)} (${agreement.runnerUps} compared)`)
    for (const [i, text] of followUps.caches.map((r) => r.text).entries()) o.say(`  follow-up ${i + 1}: ${JSON.stringify(text)}`)
    return {
      llama_server_args: extraArgs, models: [a.label, b.label], conversations: CONVERSATIONS, swap_ins: o.swapIns, prefix_words: o.prefixWords, ...summary,
      first_turn_ttft_ms: Object.fromEntries(SETUPS.map((s) => [s, first[s].map((r) => Math.round(r.ttftMs))])),
      after_restart: afterRestart.map((r) => ({ ttft_ms: Math.round(r.ttftMs), cached: r.cachedTokens, prompt: r.promptTokens })),
      ratio_vs_best_other: ratio, after_restart_ratio_vs_best_other: restartRatio, identical_answers: agreement.identical, answers_compared: o.swapIns, max_top1_logprob_diff: agreement.maxTopDiff, max_runner_up_logprob_diff: agreement.maxRunnerUpDiff, runner_ups_compared: agreement.runnerUps,
      answers: Object.fromEntries(SETUPS.map((s) => [s, followUps[s].map((r) => r.text)])),
      // What the comparison compared: each restored follow-up's tokens' logprobs, [top-1, runner-up].
      caches_logprobs: followUps.caches.map((r) => r.logprobs.map((l) => [l.top, l.runnerUp ?? null])),
    }
  } finally {
    await (restarted as LlamaServer | null)?.stop()
    killAll(children)
    await new Promise((r) => setTimeout(r, 1000))
  }
}

const COLD = ['no-caches', 'router', 'restart'] as const

/**
 * The restored follow-ups against the cold setups' (each evaluated its whole prompt): a follow-up counts as identical
 * when its text and token count equal every cold one's. The logprob differences are the largest over all of them: the
 * top-1's (at most 1e-2 to count as the same state), and the runner-up's, which still tells states apart where a steered token's is 0.
 */
function compareAnswers (followUps: Record<Setup, ChatResult[]>): { identical: number, maxTopDiff: number, maxRunnerUpDiff: number, runnerUps: number } {
  let identical = 0
  let maxTopDiff = 0
  let maxRunnerUpDiff = 0
  let runnerUps = 0
  for (const [i, restored] of followUps.caches.entries()) {
    let same = restored.logprobs.length > 0
    for (const setup of COLD) {
      const cold = followUps[setup][i]!
      if (cold.text !== restored.text || cold.logprobs.length !== restored.logprobs.length) { same = false; continue }
      for (const [t, mine] of restored.logprobs.entries()) {
        const theirs = cold.logprobs[t]!
        maxTopDiff = Math.max(maxTopDiff, Math.abs(mine.top - theirs.top))
        if (mine.runnerUp === undefined || theirs.runnerUp === undefined) continue
        maxRunnerUpDiff = Math.max(maxRunnerUpDiff, Math.abs(mine.runnerUp - theirs.runnerUp))
        runnerUps++
      }
    }
    if (same) identical++
  }
  return { identical, maxTopDiff, maxRunnerUpDiff, runnerUps }
}
