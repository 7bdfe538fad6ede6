import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { Pool } from 'undici'
import { LlamaServer } from '../../runtimes/process/llama-server.js'
import type { RuntimeBuild } from '../../runtimes/types.js'
import { chatStream } from './bench-chat.js'
import { killAll, routerModelsDir, startGateway, startRouter, type ServerShape } from './bench-setups.js'
import { percentile } from '../stats.js'

/**
 * The model-swap scenario: two models and room for one. Each switch is a request for the model not loaded, timed
 * to its first token, in turns through llamagate (`max_loaded_models: 1`), llama-server's router
 * (`--models-max 1`) and "restart" (what a script or llama-swap does: stop llama-server, start it on the other
 * model, then send the request; no proxy). After each switch, one request to the model now loaded, for the
 * part of a switch's time that is the answer itself.
 */

const SETUPS = ['llamagate', 'router', 'restart'] as const
type Setup = (typeof SETUPS)[number]

export interface SwapOptions {
  build: RuntimeBuild
  /** The two models, by label. */
  models: [{ label: string, file: string }, { label: string, file: string }]
  dir: string
  shape: ServerShape
  switches: number
  say: (line: string) => void
}

const BODY = { messages: [{ role: 'user', content: 'Say hello.' }], max_tokens: 4, temperature: 0, ignore_eos: true }

export async function benchSwap (o: SwapOptions): Promise<Record<string, unknown>> {
  const [a, b] = o.models
  const children = []
  let restarted: LlamaServer | null = null
  const restartOn = async (file: string): Promise<string> => {
    await restarted?.stop()
    restarted = new LlamaServer({ build: o.build, modelPath: file, alias: 'bench', ctxSize: o.shape.ctxPerSlot * o.shape.parallel, parallel: o.shape.parallel, threads: o.shape.threads })
    await restarted.start()
    return restarted.endpoint.address.baseUrl
  }
  try {
    const gateway = await startGateway(join(o.dir, 'llamagate'), o.build, { [`bench/${a.label}`]: a.file, [`bench/${b.label}`]: b.file }, o.shape, { maxLoaded: 1 })
    children.push(gateway.child)
    const router = await startRouter(o.build, await routerModelsDir(join(o.dir, 'router-models'), { [a.label]: a.file, [b.label]: b.file }), o.shape, 1)
    children.push(router.child)
    const gatewayPool = new Pool(gateway.url, { connections: 1 })
    const routerPool = new Pool(router.url, { connections: 1 })
    /** Sends one request for `model` (0: a, 1: b) through `setup`, from the moment the switch begins. */
    const request = async (setup: Setup, model: 0 | 1, switching: boolean): Promise<number> => {
      const started = performance.now()
      const { file, label } = o.models[model]
      let result
      if (setup === 'llamagate') result = await chatStream(gatewayPool, { ...BODY, model: `bench/${label}` })
      else if (setup === 'router') result = await chatStream(routerPool, { ...BODY, model: label })
      else {
        const url = switching ? await restartOn(file) : restarted!.endpoint.address.baseUrl
        const pool = new Pool(url, { connections: 1 })
        result = await chatStream(pool, { ...BODY, model: 'bench' })
        await pool.close()
      }
      if (!result.ok || result.ttftMs < 0) throw new Error(`${setup}, ${label}: ${result.error ?? 'no text in the answer'}`)
      return performance.now() - started - (result.totalMs - result.ttftMs)
    }
    for (const setup of SETUPS) await request(setup, 0, true) // each starts with a loaded
    const switchMs: Record<Setup, number[]> = { llamagate: [], router: [], restart: [] }
    const loadedMs: Record<Setup, number[]> = { llamagate: [], router: [], restart: [] }
    for (let i = 0; i < o.switches; i++) {
      const model = i % 2 === 0 ? 1 : 0
      for (let k = 0; k < SETUPS.length; k++) {
        const setup = SETUPS[(i + k) % SETUPS.length]!
        switchMs[setup].push(await request(setup, model, true))
        loadedMs[setup].push(await request(setup, model, false))
      }
    }
    await Promise.all([gatewayPool.close(), routerPool.close()])
    // The two directions load different files (a Q4_K_M model loads slower than a Q8_0 one: its weights are
    // repacked on load), so each has its own median; the ratio compares their sums.
    const direction = (setup: Setup, to: 0 | 1): number[] => switchMs[setup].filter((_, i) => (i % 2 === 0 ? 1 : 0) === to)
    const summary = Object.fromEntries(SETUPS.map((setup) => [setup, {
      switch_to_ttft_p50_ms: Object.fromEntries(o.models.map((m, to) => [m.label, percentile(direction(setup, to as 0 | 1), 50)])),
      switch_ttft_sum_ms: percentile(direction(setup, 0), 50) + percentile(direction(setup, 1), 50),
      loaded_ttft_p50_ms: percentile(loadedMs[setup], 50),
      switch_ms: switchMs[setup],
    }]))
    const ratio = summary.llamagate!.switch_ttft_sum_ms / summary.router!.switch_ttft_sum_ms
    const phases = await switchPhases(join(o.dir, 'llamagate', 'llamagate.log'), switchMs.llamagate!.length)
    o.say(`\nmodel swap (${a.label} ⇄ ${b.label}, room for one; ${o.switches} switches each, in turns): time to first token, medians`)
    o.say(`setup       to ${a.label.padEnd(18)} to ${b.label.padEnd(18)} loaded, no switch`)
    for (const setup of SETUPS) {
      const s = summary[setup]!
      o.say(`${setup.padEnd(10)} ${`${s.switch_to_ttft_p50_ms[a.label]!.toFixed(0)} ms`.padStart(12).padEnd(22)}${`${s.switch_to_ttft_p50_ms[b.label]!.toFixed(0)} ms`.padStart(12).padEnd(22)}${s.loaded_ttft_p50_ms.toFixed(0).padStart(8)} ms`)
    }
    o.say(`llamagate's switches, from its log (medians): ${phases.unload_p50_ms.toFixed(0)} ms to unload the idle model, ${phases.load_p50_ms.toFixed(0)} ms from then to the other one loaded`)
    o.say(`llamagate/router switch: ${ratio.toFixed(3)} (the two directions' medians summed; target ≤ 1)`)
    return { models: [a.label, b.label], switches: o.switches, ...summary, llamagate_phases: phases, ratio_vs_router: ratio }
  } finally {
    await (restarted as LlamaServer | null)?.stop()
    killAll(children)
    await new Promise((r) => setTimeout(r, 1000))
  }
}

/**
 * Where llamagate's switches went, from its log: eviction decided → model unloaded → the next one loaded. The server
 * writes its log in batches (core/base/log-stream.ts): read again until the `switches` are all there, for up to 5 s.
 */
async function switchPhases (logFile: string, switches: number): Promise<{ unload_p50_ms: number, load_p50_ms: number, unload_ms: number[], load_ms: number[] }> {
  const deadline = Date.now() + 5000
  for (;;) {
    const phases = switchPhasesIn(await readFile(logFile, 'utf8'))
    if ((phases.unload_ms.length >= switches && phases.load_ms.length >= switches) || Date.now() > deadline) return phases
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

function switchPhasesIn (log: string): { unload_p50_ms: number, load_p50_ms: number, unload_ms: number[], load_ms: number[] } {
  const lines = log.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { time: number, msg: string })
  const unload: number[] = []
  const load: number[] = []
  let evicting: number | null = null
  let unloaded: number | null = null
  for (const { time, msg } of lines) {
    if (msg.startsWith('unloading an idle model to make room')) evicting = time
    else if (msg === 'model unloaded' && evicting !== null) { unload.push(time - evicting); unloaded = time; evicting = null }
    else if (msg === 'model loaded' && unloaded !== null) { load.push(time - unloaded); unloaded = null }
  }
  return { unload_p50_ms: percentile(unload, 50), load_p50_ms: percentile(load, 50), unload_ms: unload, load_ms: load }
}
