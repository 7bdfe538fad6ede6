import { join, resolve } from 'node:path'
import { Pool } from 'undici'
import { LlamaServer } from '../../runtimes/process/llama-server.js'
import type { RuntimeBuild } from '../../runtimes/types.js'
import { runLoad, streamOnce, type LoadResult } from './bench-load.js'
import { killAll, procStat, routerModelsDir, startGateway, startPipe, startRouter, stopForProfiles, unloadFromRouter, type ServerShape } from './bench-setups.js'
import { percentile } from '../stats.js'

/**
 * The throughput scenario: the same streamed /v1/chat/completions load at each concurrency through llama-server
 * itself (direct), its router mode, a bare relay in front of the direct one (pipe: the cost of the hop alone),
 * llamagate, and optionally another built llamagate (baseline), in rotated order; then cold starts, llamagate
 * against the router, in turns.
 */

const SETUPS = ['direct', 'router', 'pipe', 'llamagate', 'baseline', 'plugin'] as const
type Setup = (typeof SETUPS)[number]
interface Target { setup: Setup, url: string, model: string }

const MODEL = 'bench/model'

export interface ThroughputOptions {
  build: RuntimeBuild
  /** The GGUF, and a label for the tables. */
  file: string
  label: string
  dir: string
  shape: ServerShape
  levels: number[]
  /** Requests each client sends back to back, per level (its index in levels). */
  rounds: number[]
  reps: number
  maxTokens: number
  cold: number
  /** Another built llamagate checkout, run as a fifth setup. */
  baseline?: string
  /** A plugin (a file; `noop`: call hooks that do nothing; `empty`: no hooks, the control) loaded by this llamagate in a setup of its own. */
  plugin?: string
  say: (line: string) => void
}

export async function benchThroughput (o: ThroughputOptions): Promise<Record<string, unknown>> {
  const children = []
  const modelsDir = await routerModelsDir(join(o.dir, 'router-models'), { [o.label]: o.file })
  const direct = new LlamaServer({ build: o.build, modelPath: o.file, alias: MODEL, ctxSize: o.shape.ctxPerSlot * o.shape.parallel, parallel: o.shape.parallel, threads: o.shape.threads })
  try {
    await direct.start()
    const router = await startRouter(o.build, modelsDir, o.shape)
    children.push(router.child)
    const pipe = await startPipe(Number(new URL(direct.endpoint.address.baseUrl).port))
    children.push(pipe.child)
    const gateway = await startGateway(join(o.dir, 'llamagate'), o.build, { [MODEL]: o.file }, o.shape)
    children.push(gateway.child)
    const baseline = o.baseline !== undefined ? await startGateway(join(o.dir, 'baseline'), o.build, { [MODEL]: o.file }, o.shape, { root: resolve(o.baseline) }) : null
    if (baseline !== null) children.push(baseline.child)
    const pluginFile = o.plugin === 'noop' || o.plugin === 'empty' ? join(import.meta.dirname, `${o.plugin === 'noop' ? 'noop-hooks' : 'empty'}-plugin.js`) : o.plugin !== undefined ? resolve(o.plugin) : null
    const plugin = pluginFile !== null ? await startGateway(join(o.dir, 'plugin'), o.build, { [MODEL]: o.file }, o.shape, { extra: [`plugins:\n  - path: ${pluginFile}`] }) : null
    if (plugin !== null) children.push(plugin.child)
    const targets: Target[] = [
      { setup: 'direct', url: direct.endpoint.address.baseUrl, model: MODEL },
      { setup: 'router', url: router.url, model: router.models[0]! },
      { setup: 'pipe', url: pipe.url, model: MODEL },
      { setup: 'llamagate', url: gateway.url, model: MODEL },
      ...(baseline !== null ? [{ setup: 'baseline' as const, url: baseline.url, model: MODEL }] : []),
      ...(plugin !== null ? [{ setup: 'plugin' as const, url: plugin.url, model: MODEL }] : []),
    ]
    const targetOf = (setup: Setup): Target => targets.find((t) => t.setup === setup)!
    for (const target of targets) await runLoad(target.url, target.model, 2, 1, 8) // warm up (and load)
    const rows: Array<{ setup: Setup } & LoadResult> = []
    // CPU of the two proxies in front of llama-server, per concurrency level (ms over all its repetitions).
    const proxyCpu = async (): Promise<{ gateway: number, pipe: number, plugin: number }> => ({ gateway: (await procStat(gateway.child.pid!)).cpuMs, pipe: (await procStat(pipe.child.pid!)).cpuMs, plugin: plugin !== null ? (await procStat(plugin.child.pid!)).cpuMs : 0 })
    const cpuMs: Record<number, { gateway: number, pipe: number, plugin: number }> = {}
    for (const [index, concurrency] of o.levels.entries()) {
      const rounds = o.rounds[index] ?? o.rounds.at(-1)!
      const before = await proxyCpu()
      for (let rep = 0; rep < o.reps; rep++) {
        // Rotate the order, so that no setup always runs first on a warm (or hot) machine.
        for (let k = 0; k < targets.length; k++) {
          const target = targets[(rep + k) % targets.length]!
          rows.push({ setup: target.setup, ...await runLoad(target.url, target.model, concurrency, rounds, o.maxTokens) })
        }
      }
      const after = await proxyCpu()
      cpuMs[concurrency] = { gateway: after.gateway - before.gateway, pipe: after.pipe - before.pipe, plugin: after.plugin - before.plugin }
    }
    const gatewayMemory = await procStat(gateway.child.pid!)
    const summary = o.levels.map((concurrency) => {
      const of = (setup: Setup) => rows.filter((r) => r.setup === setup && r.concurrency === concurrency)
      const med = (setup: Setup, key: keyof LoadResult) => percentile(of(setup).map((r) => r[key] as number), 50)
      const tokens = (setup: Setup): number => of(setup).reduce((sum, r) => sum + r.aggregateTps * r.wallMs / 1000, 0)
      const entry: Record<string, unknown> = {
        concurrency,
        gateway_cpu_ms: cpuMs[concurrency]!.gateway,
        gateway_cpu_us_per_token: cpuMs[concurrency]!.gateway * 1000 / tokens('llamagate'),
        pipe_cpu_us_per_token: cpuMs[concurrency]!.pipe * 1000 / tokens('pipe'),
      }
      for (const { setup } of targets) {
        entry[setup] = { aggregate_tps: med(setup, 'aggregateTps'), per_stream_tps: med(setup, 'perStreamTps'), ttft_p50_ms: med(setup, 'ttftP50'), ttft_p99_ms: med(setup, 'ttftP99'), failed: of(setup).reduce((s, r) => s + r.failed, 0), retried: of(setup).reduce((s, r) => s + r.retried, 0) }
      }
      entry.ratio_vs_direct = med('llamagate', 'aggregateTps') / med('direct', 'aggregateTps')
      entry.ratio_vs_router = med('llamagate', 'aggregateTps') / med('router', 'aggregateTps')
      entry.ratio_vs_pipe = med('llamagate', 'aggregateTps') / med('pipe', 'aggregateTps')
      entry.pipe_vs_direct = med('pipe', 'aggregateTps') / med('direct', 'aggregateTps')
      entry.added_ttft_p50_ms = med('llamagate', 'ttftP50') - med('direct', 'ttftP50')
      if (baseline !== null) {
        entry.ratio_vs_baseline = med('llamagate', 'aggregateTps') / med('baseline', 'aggregateTps')
        entry.baseline_added_ttft_p50_ms = med('baseline', 'ttftP50') - med('direct', 'ttftP50')
      }
      if (plugin !== null) {
        entry.plugin_vs_llamagate = med('plugin', 'aggregateTps') / med('llamagate', 'aggregateTps')
        entry.plugin_cpu_us_per_token = cpuMs[concurrency]!.plugin * 1000 / tokens('plugin')
      }
      return entry
    })
    const [llamagateColdMs, routerColdMs] = await coldStarts([
      { target: targetOf('llamagate'), unload: async () => { await fetch(`${gateway.url}/api/stop`, { method: 'POST', body: JSON.stringify({ model: MODEL }) }) } },
      { target: targetOf('router'), unload: () => unloadFromRouter(router.url, router.models[0]!) },
    ], o.cold)
    const quartiles = (ms: number[]): number[] => [percentile(ms, 25), percentile(ms, 75)]
    const cold = {
      llamagate_ms: percentile(llamagateColdMs!, 50), router_ms: percentile(routerColdMs!, 50), samples: o.cold,
      llamagate_quartiles_ms: quartiles(llamagateColdMs!), router_quartiles_ms: quartiles(routerColdMs!),
    }
    printTable(o.say, o.label, summary, cold, gatewayMemory.peakRssBytes)
    return { model: o.label, summary, cold_start: cold, gateway_peak_rss_mib: gatewayMemory.peakRssBytes / 2 ** 20 }
  } finally {
    await direct.stop()
    await stopForProfiles(children)
    killAll(children)
    await new Promise((r) => setTimeout(r, 1500))
  }
}

/**
 * Cold start, request for an unloaded model → first token, `count` times for each target in turns (the order
 * alternating), so that both meet the same moments of a noisy machine. Every time, per target.
 */
async function coldStarts (targets: Array<{ target: Target, unload: () => Promise<void> }>, count: number): Promise<number[][]> {
  const times: number[][] = targets.map(() => [])
  const pools = targets.map(({ target }) => new Pool(target.url, { connections: 1 }))
  for (let i = 0; i < count; i++) {
    for (let k = 0; k < targets.length; k++) {
      const index = (i + k) % targets.length
      await targets[index]!.unload()
      await new Promise((r) => setTimeout(r, 200)) // let the stopped process's exit settle
      times[index]!.push((await streamOnce(pools[index]!, targets[index]!.target.model, 4, i)).ttftMs)
    }
  }
  await Promise.all(pools.map((p) => p.close()))
  return times
}

interface ColdStart { llamagate_ms: number, router_ms: number, samples: number, llamagate_quartiles_ms: number[], router_quartiles_ms: number[] }

function printTable (say: (line: string) => void, label: string, summary: Array<Record<string, any>>, cold: ColdStart, peakRss: number): void {
  const f = (n: number, d = 1) => n.toFixed(d).padStart(8)
  const range = (qs: number[]): string => qs.map((q) => q.toFixed(1)).join('-')
  say(`\n${label}: aggregate tok/s | TTFT p50 ms | TTFT p99 ms  (medians of the repetitions)`)
  say('conc  setup        agg tok/s  stream t/s  ttft p50  ttft p99')
  for (const row of summary) {
    for (const setup of SETUPS.filter((s) => row[s] !== undefined)) {
      const r = row[setup]
      say(`${String(row.concurrency).padStart(4)}  ${setup.padEnd(10)} ${f(r.aggregate_tps)}  ${f(r.per_stream_tps)}  ${f(r.ttft_p50_ms, 2)}  ${f(r.ttft_p99_ms, 2)}${r.failed ? `  (${r.failed} failed)` : ''}${r.retried ? `  (${r.retried} resent after a closed connection)` : ''}`)
    }
    say(`      llamagate/direct ${row.ratio_vs_direct.toFixed(3)}  llamagate/router ${row.ratio_vs_router.toFixed(3)}  llamagate/pipe ${row.ratio_vs_pipe.toFixed(3)}  pipe/direct ${row.pipe_vs_direct.toFixed(3)}`)
    if (row.plugin_vs_llamagate !== undefined) say(`      with the plugin/without ${row.plugin_vs_llamagate.toFixed(3)}  its gateway's CPU ${row.plugin_cpu_us_per_token.toFixed(0)} µs per token`)
    if (row.ratio_vs_baseline !== undefined) say(`      llamagate/baseline ${row.ratio_vs_baseline.toFixed(3)}  added TTFT p50: baseline ${row.baseline_added_ttft_p50_ms.toFixed(2)} ms`)
    say(`      added TTFT p50 ${row.added_ttft_p50_ms.toFixed(2)} ms  gateway CPU ${row.gateway_cpu_ms} ms (${row.gateway_cpu_us_per_token.toFixed(0)} µs per token; the pipe's ${row.pipe_cpu_us_per_token.toFixed(0)})`)
  }
  say(`cold start (unloaded → first token, median of ${cold.samples}, in turns): llamagate ${cold.llamagate_ms.toFixed(1)} ms, router ${cold.router_ms.toFixed(1)} ms (ratio ${(cold.llamagate_ms / cold.router_ms).toFixed(2)}); quartiles llamagate ${range(cold.llamagate_quartiles_ms)}, router ${range(cold.router_quartiles_ms)} ms`)
  say(`llamagate peak RSS: ${(peakRss / 2 ** 20).toFixed(1)} MiB`)
}
