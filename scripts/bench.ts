import { spawn, type ChildProcess } from 'node:child_process'
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { cpus, tmpdir, totalmem } from 'node:os'
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { loadConfig } from '../core/config.js'
import { GATEWAY_NODE_FLAGS } from '../core/node-flags.js'
import { startGatewayProcess } from './gateway-process.js'
import { PACKAGE_ROOT } from '../core/paths.js'
import { freePort } from '../runtimes/free-port.js'
import { LlamaServer } from '../runtimes/llama-server.js'
import { RuntimeRegistry } from '../runtimes/registry.js'
import type { RuntimeBuild } from '../runtimes/types.js'
import { benchTags } from './bench-tags.js'
import { runLoad, streamOnce, type LoadResult } from './bench-load.js'
import { percentile } from './stats.js'
import { writeTinyGguf } from './tiny-model.js'
import { Pool } from 'undici'

/**
 * `npm run bench`: the same streamed /v1/chat/completions load through llama-server itself (direct),
 * llama-server's router mode, a bare Node relay in front of the direct one (pipe: the cost of the hop alone,
 * bench-pipe.ts), and llamagate, side by side in one run on one model, with ratios.
 * `--large` adds a model of a few hundred MB, where generation and not the proxy is the bottleneck.
 * `--backend cuda` (or rocm, metal, vulkan) runs every setup on that build instead of the CPU one and writes
 * docs/benchmarks-<backend>.json; `--baseline DIR` adds another built llamagate checkout (a change's before) to
 * the same rotation, with llamagate/baseline ratios; `--reps N`, `--tokens N`, `--cold N` (cold starts of each, 9), `--out FILE` (the JSON; docs/benchmarks.json), `--threads N` (0: llama-server's default), `--concurrency 1,8,32`.
 */

const SETUPS = ['direct', 'router', 'pipe', 'llamagate', 'baseline'] as const
type Setup = (typeof SETUPS)[number]
interface Target { setup: Setup, url: string, model: string }

const MODEL = 'bench/tiny'
const PARALLEL = 8
const CTX_PER_SLOT = 512

function say (line: string): void { process.stdout.write(`${line}\n`) }

async function waitHealthy (url: string, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    try { if ((await fetch(`${url}/health`)).status === 200) return } catch { /* starting */ }
    if (Date.now() > deadline) throw new Error(`${url} did not become healthy`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

function procStat (pid: number): Promise<{ cpuMs: number, rssBytes: number, peakRssBytes: number }> {
  return Promise.all([readFile(`/proc/${pid}/stat`, 'utf8'), readFile(`/proc/${pid}/status`, 'utf8')]).then(([stat, status]) => {
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    const ticks = Number(fields[11]) + Number(fields[12]) // utime + stime, in 1/100 s
    const kb = (key: string): number => Number(new RegExp(`${key}:\\s+(\\d+)`).exec(status)?.[1] ?? 0) * 1024
    return { cpuMs: ticks * 10, rssBytes: kb('VmRSS'), peakRssBytes: kb('VmHWM') }
  })
}

async function startRouter (build: RuntimeBuild, modelsDir: string, threads: number | undefined): Promise<{ child: ChildProcess, url: string, model: string }> {
  const port = await freePort()
  const child = spawn(build.serverPath, ['--models-dir', modelsDir, '--models-max', '1', '--host', '127.0.0.1', '--port', String(port),
    '--ctx-size', String(CTX_PER_SLOT * PARALLEL), '--parallel', String(PARALLEL), '--jinja', '--no-webui',
    ...(threads !== undefined ? ['--threads', String(threads)] : [])], { stdio: 'ignore', detached: true })
  const url = `http://127.0.0.1:${port}`
  await waitHealthy(url)
  const models = await (await fetch(`${url}/models`)).json() as { data: Array<{ id: string }> }
  return { child, url, model: models.data[0]!.id }
}

/** The bare relay (bench-pipe.ts) in front of llama-server's `port`, in a process of its own like the gateway. */
async function startPipe (port: number): Promise<{ child: ChildProcess, url: string }> {
  const child = spawn(process.execPath, [join(PACKAGE_ROOT, 'dist/scripts/bench-pipe.js'), String(port)], { stdio: ['ignore', 'pipe', 'inherit'], detached: true })
  const listening = await new Promise<string>((resolve, reject) => {
    child.stdout!.once('data', (d: Buffer) => resolve(d.toString().trim()))
    child.once('exit', (code) => reject(new Error(`bench-pipe exited with ${code}`)))
  })
  return { child, url: `http://127.0.0.1:${listening}` }
}

async function startGateway (dir: string, build: RuntimeBuild, modelFile: string, threads: number | undefined, root = PACKAGE_ROOT): Promise<{ child: ChildProcess, url: string }> {
  await mkdir(dir, { recursive: true })
  const config = join(dir, 'llamagate.yaml')
  await writeFile(config, [
    `data_dir: ${join(dir, 'gateway')}`, 'port: 0', 'log_level: info', 'keep_alive: -1',
    `runtimes:\n  ${build.backend}: { bin: ${build.binDir} }`, `runtime: ${build.backend}`,
    `default_options: { num_ctx: ${CTX_PER_SLOT}, num_parallel: ${PARALLEL}${threads !== undefined ? `, num_thread: ${threads}` : ''} }`, 'limits: { queue_length: 1000 }',
  ].join('\n'))
  const cli = join(root, 'dist/core/cli.js')
  const imported = spawn(process.execPath, [cli, 'import', MODEL, modelFile, '--config', config], { stdio: 'inherit' })
  await new Promise((resolve) => imported.once('exit', resolve))
  return startGatewayProcess(config, join(dir, 'llamagate.log'), undefined, root)
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

async function main (): Promise<void> {
  const { values } = parseArgs({ options: { concurrency: { type: 'string', default: '1,8,32' }, large: { type: 'boolean', default: false }, reps: { type: 'string', default: '5' }, tokens: { type: 'string', default: '128' }, threads: { type: 'string' }, cold: { type: 'string', default: '9' }, out: { type: 'string' }, backend: { type: 'string', default: 'cpu' }, baseline: { type: 'string' } } })
  // llama.cpp's CPU threads spin between the steps of a token. On a machine of 2 cores, its default (one per
  // core) leaves none for the load generator or a proxy, and every setup measures the scheduler's noise more
  // than itself (tiny model, direct: 2270 tok/s with 1 thread, 1750 with 2). So there every setup gets
  // the same --threads 1 (llamagate through its num_thread option); --threads N sets another, 0 leaves
  // llama-server's default.
  const threadsArg = values.threads !== undefined ? Number(values.threads) : cpus().length <= 2 ? 1 : 0
  const threads = threadsArg > 0 ? threadsArg : undefined
  say(`llama-server threads in every setup: ${threads ?? 'its default'}; llamagate runs with ${GATEWAY_NODE_FLAGS.join(' ')}`)
  const reps = Number(values.reps)
  const coldCount = Number(values.cold)
  const maxTokens = Number(values.tokens)
  const registry = await RuntimeRegistry.create({ config: loadConfig() })
  // Every setup runs the same build: the CPU one by default (the one CI and every machine has), or the
  // GPU build named by --backend, where the GPU rather than the proxy sets the pace.
  const build = registry.builds.find((b) => b.backend === values.backend)
  if (!build) throw new Error(`no ${values.backend} llama-server: run npm run runtime:build -- --backend ${values.backend} first`)
  const output = values.out ?? (values.backend === 'cpu' ? 'docs/benchmarks.json' : `docs/benchmarks-${values.backend}.json`)
  const dir = await mkdtemp(join(tmpdir(), 'llamagate-bench-'))
  const children: ChildProcess[] = []
  const report: Record<string, unknown> = {
    machine: { cpus: cpus().length, cpu: cpus()[0]?.model, memory_gib: Math.round(totalmem() / 2 ** 30), node: process.version },
    llama_cpp: `${build.version} ${build.commit ?? ''}`.trim(),
    backend: build.backend,
    devices: registry.devices.filter((d) => d.backend === build.backend).map((d) => d.name),
    settings: { parallel: PARALLEL, ctx_per_slot: CTX_PER_SLOT, max_tokens: maxTokens, reps, threads: threads ?? 'llama-server default', gateway_node_flags: GATEWAY_NODE_FLAGS },
    models: [] as unknown[],
  }
  try {
    const models = [{ label: 'tiny', nEmbd: 64, nLayer: 2, nFf: 128 }, ...(values.large ? [{ label: 'large', nEmbd: 1024, nLayer: 8, nFf: 4096 }] : [])]
    for (const spec of models) {
      const modelsDir = join(dir, `models-${spec.label}`)
      await mkdir(modelsDir, { recursive: true })
      const { file, bytes } = await writeTinyGguf({ file: join(modelsDir, `${spec.label}.gguf`), nEmbd: spec.nEmbd, nLayer: spec.nLayer, nFf: spec.nFf, nHead: spec.nEmbd >= 1024 ? 16 : 4, name: spec.label })
      say(`\n== model ${spec.label}: ${(bytes / 2 ** 20).toFixed(1)} MiB`)
      const direct = new LlamaServer({ build, modelPath: file, alias: MODEL, ctxSize: CTX_PER_SLOT * PARALLEL, parallel: PARALLEL, threads })
      await direct.start()
      const router = await startRouter(build, modelsDir, threads)
      children.push(router.child)
      const pipe = await startPipe(Number(new URL(direct.endpoint.address.baseUrl).port))
      children.push(pipe.child)
      const gateway = await startGateway(join(dir, spec.label), build, file, threads)
      children.push(gateway.child)
      const baseline = values.baseline !== undefined ? await startGateway(join(dir, `${spec.label}-baseline`), build, file, threads, resolve(values.baseline)) : null
      if (baseline !== null) children.push(baseline.child)
      const targets: Target[] = [
        { setup: 'direct', url: direct.endpoint.address.baseUrl, model: MODEL },
        { setup: 'router', url: router.url, model: router.model },
        { setup: 'pipe', url: pipe.url, model: MODEL },
        { setup: 'llamagate', url: gateway.url, model: MODEL },
        ...(baseline !== null ? [{ setup: 'baseline' as const, url: baseline.url, model: MODEL }] : []),
      ]
      const targetOf = (setup: Setup): Target => targets.find((t) => t.setup === setup)!
      for (const target of targets) await runLoad(target.url, target.model, 2, 1, 8) // warm up (and load)
      const rows: Array<{ setup: Setup } & LoadResult> = []
      // CPU of the two proxies in front of llama-server, per concurrency level (ms over all its repetitions).
      const proxies = { gateway: gateway.child.pid!, pipe: pipe.child.pid! }
      const proxyCpu = async (): Promise<{ gateway: number, pipe: number }> => ({ gateway: (await procStat(proxies.gateway)).cpuMs, pipe: (await procStat(proxies.pipe)).cpuMs })
      const cpuMs: Record<number, { gateway: number, pipe: number }> = {}
      const levels = values.concurrency.split(',').filter((c) => c !== '').map(Number)
      for (const concurrency of levels) {
        const rounds = concurrency === 1 ? 16 : concurrency === 8 ? 4 : 2
        const before = await proxyCpu()
        for (let rep = 0; rep < reps; rep++) {
          // Rotate the order, so that no setup always runs first on a warm (or hot) machine.
          for (let k = 0; k < targets.length; k++) {
            const target = targets[(rep + k) % targets.length]!
            rows.push({ setup: target.setup, ...await runLoad(target.url, target.model, concurrency, rounds, maxTokens) })
          }
        }
        const after = await proxyCpu()
        cpuMs[concurrency] = { gateway: after.gateway - before.gateway, pipe: after.pipe - before.pipe }
      }
      const gatewayMemory = await procStat(gateway.child.pid!)
      const summary = levels.map((concurrency) => {
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
        return entry
      })
      const [llamagateColdMs, routerColdMs] = await coldStarts([
        { target: targetOf('llamagate'), unload: async () => { await fetch(`${gateway.url}/api/stop`, { method: 'POST', body: JSON.stringify({ model: MODEL }) }) } },
        {
          target: targetOf('router'),
          unload: async () => {
            await fetch(`${router.url}/models/unload`, { method: 'POST', body: JSON.stringify({ model: router.model }) })
            for (let i = 0; i < 200; i++) {
              const list = await (await fetch(`${router.url}/models`)).json() as { data: Array<{ id: string, status?: { value: string } }> }
              if (list.data.find((m) => m.id === router.model)?.status?.value !== 'loaded') break
              await new Promise((r) => setTimeout(r, 25))
            }
          },
        },
      ], coldCount)
      const quartiles = (ms: number[]): number[] => [percentile(ms, 25), percentile(ms, 75)]
      const cold = {
        llamagate_ms: percentile(llamagateColdMs!, 50), router_ms: percentile(routerColdMs!, 50), samples: coldCount,
        llamagate_quartiles_ms: quartiles(llamagateColdMs!), router_quartiles_ms: quartiles(routerColdMs!),
      }
      ;(report.models as unknown[]).push({ model: spec.label, bytes, summary, cold_start: cold, gateway_peak_rss_mib: gatewayMemory.peakRssBytes / 2 ** 20 })
      printTable(spec.label, summary, cold, gatewayMemory.peakRssBytes)
      await direct.stop()
      for (const child of [router.child, pipe.child, gateway.child, ...(baseline !== null ? [baseline.child] : [])]) child.kill('SIGTERM')
      await new Promise((r) => setTimeout(r, 1500))
    }
    const tags = await benchTags()
    report.tags_1000 = tags
    say(`\n/api/tags with 1,000 models: p50 ${tags.p50_ms.toFixed(2)} ms, p99 ${tags.p99_ms.toFixed(2)} ms`)
    await writeFile(resolve(PACKAGE_ROOT, output), JSON.stringify({ date: new Date().toISOString(), ...report }, null, 2) + '\n')
    say(`\nwrote ${output}`)
  } finally {
    for (const child of children) { try { process.kill(-child.pid!, 'SIGKILL') } catch { child.kill('SIGKILL') } }
    await LlamaServer.stopAll()
    await rm(dir, { recursive: true, force: true })
  }
}

interface ColdStart { llamagate_ms: number, router_ms: number, samples: number, llamagate_quartiles_ms: number[], router_quartiles_ms: number[] }

function printTable (label: string, summary: Array<Record<string, any>>, cold: ColdStart, peakRss: number): void {
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
    if (row.ratio_vs_baseline !== undefined) say(`      llamagate/baseline ${row.ratio_vs_baseline.toFixed(3)}  added TTFT p50: baseline ${row.baseline_added_ttft_p50_ms.toFixed(2)} ms`)
    say(`      added TTFT p50 ${row.added_ttft_p50_ms.toFixed(2)} ms  gateway CPU ${row.gateway_cpu_ms} ms (${row.gateway_cpu_us_per_token.toFixed(0)} µs per token; the pipe's ${row.pipe_cpu_us_per_token.toFixed(0)})`)
  }
  say(`cold start (unloaded → first token, median of ${cold.samples}, in turns): llamagate ${cold.llamagate_ms.toFixed(1)} ms, router ${cold.router_ms.toFixed(1)} ms (ratio ${(cold.llamagate_ms / cold.router_ms).toFixed(2)}); quartiles llamagate ${range(cold.llamagate_quartiles_ms)}, router ${range(cold.router_quartiles_ms)} ms`)
  say(`llamagate peak RSS: ${(peakRss / 2 ** 20).toFixed(1)} MiB`)
}

main().catch((err) => { process.stderr.write(`bench failed: ${(err as Error).stack}\n`); process.exit(1) })
