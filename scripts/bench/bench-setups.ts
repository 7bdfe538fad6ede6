import { spawn, type ChildProcess } from 'node:child_process'
import { link, mkdir, readFile, symlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { Pool } from 'undici'
import { PACKAGE_ROOT } from '../../core/base/paths.js'
import { freePort } from '../../runtimes/process/free-port.js'
import { LlamaServer } from '../../runtimes/process/llama-server.js'
import { allocatorEnv } from '../../runtimes/process/malloc-tunables.js'
import type { RuntimeBuild } from '../../runtimes/types.js'
import { startGatewayProcess } from '../gateway-process.js'

/**
 * The setups a bench compares, started the same way for every scenario: llama-server's router mode, a bare
 * relay ("pipe") and llamagate, each as a process of its own. Direct llama-server is runtimes/process/llama-server.ts's
 * LlamaServer, the same class llamagate starts its runtimes with.
 */

/** Per-model server settings every setup gets alike. */
export interface ServerShape {
  /** Context of each slot (llamagate's num_ctx); llama-server gets ctxPerSlot × parallel. */
  ctxPerSlot: number
  parallel: number
  /** --threads; unset: llama-server's default. */
  threads?: number
  /** More of llama-server's flags, for every setup alike (llamagate's through each model's `args`). */
  extraArgs?: string[]
}

export interface Started { child: ChildProcess, url: string }

export async function waitHealthy (url: string, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    try { if ((await fetch(`${url}/health`)).status === 200) return } catch { /* starting */ }
    if (Date.now() > deadline) throw new Error(`${url} did not become healthy`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

/** CPU time and memory of a process, from /proc. */
export function procStat (pid: number): Promise<{ cpuMs: number, rssBytes: number, peakRssBytes: number }> {
  return Promise.all([readFile(`/proc/${pid}/stat`, 'utf8'), readFile(`/proc/${pid}/status`, 'utf8')]).then(([stat, status]) => {
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    const ticks = Number(fields[11]) + Number(fields[12]) // utime + stime, in 1/100 s
    const kb = (key: string): number => Number(new RegExp(`${key}:\\s+(\\d+)`).exec(status)?.[1] ?? 0) * 1024
    return { cpuMs: ticks * 10, rssBytes: kb('VmRSS'), peakRssBytes: kb('VmHWM') }
  })
}

/**
 * llama-server's router mode over the GGUFs in `modelsDir`, at most `modelsMax` loaded. `--no-warmup --fit off` as
 * llamagate gives its CPU runtimes, and the allocator's huge pages as it gives every runtime on Linux (its children
 * inherit them), so that a load measures the same work in both.
 */
export async function startRouter (build: RuntimeBuild, modelsDir: string, shape: ServerShape, modelsMax = 1): Promise<Started & { models: string[] }> {
  const port = await freePort()
  const child = spawn(build.serverPath, ['--models-dir', modelsDir, '--models-max', String(modelsMax), '--host', '127.0.0.1', '--port', String(port),
    '--ctx-size', String(shape.ctxPerSlot * shape.parallel), '--parallel', String(shape.parallel), '--jinja', '--no-webui',
    ...(build.backend === 'cpu' ? ['--no-warmup', '--fit', 'off'] : []),
    ...(shape.threads !== undefined ? ['--threads', String(shape.threads)] : []), ...shape.extraArgs ?? []], { stdio: 'ignore', detached: true, env: { ...process.env, ...allocatorEnv() } })
  const url = `http://127.0.0.1:${port}`
  await waitHealthy(url)
  const models = await (await fetch(`${url}/models`)).json() as { data: Array<{ id: string }> }
  return { child, url, models: models.data.map((m) => m.id).sort() }
}

/** Asks the router to unload `model` and waits until it says so. */
export async function unloadFromRouter (url: string, model: string): Promise<void> {
  await fetch(`${url}/models/unload`, { method: 'POST', body: JSON.stringify({ model }) })
  for (let i = 0; i < 400; i++) {
    const list = await (await fetch(`${url}/models`)).json() as { data: Array<{ id: string, status?: { value: string } }> }
    if (list.data.find((m) => m.id === model)?.status?.value !== 'loaded') return
    await new Promise((r) => setTimeout(r, 25))
  }
}

/** The bare relay (bench-pipe.ts) in front of llama-server's `port`, in a process of its own like the gateway. */
export async function startPipe (port: number): Promise<Started> {
  const child = spawn(process.execPath, [join(PACKAGE_ROOT, 'dist/scripts/bench/bench-pipe.js'), String(port)], { stdio: ['ignore', 'pipe', 'inherit'], detached: true })
  const listening = await new Promise<string>((resolve, reject) => {
    child.stdout!.once('data', (d: Buffer) => resolve(d.toString().trim()))
    child.once('exit', (code) => reject(new Error(`bench-pipe exited with ${code}`)))
  })
  return { child, url: `http://127.0.0.1:${listening}` }
}

/**
 * `llamagate serve` with `models` (name → GGUF) imported by its CLI, every model kept loaded until another must
 * take its place (`maxLoaded`); `limits`: more of config.yaml's `limits` (`min_residency: 0s`). `root`: another built checkout, to compare with.
 */
export async function startGateway (dir: string, build: RuntimeBuild, models: Record<string, string>, shape: ServerShape, options: { maxLoaded?: number, limits?: string, root?: string, extra?: string[], argsFor?: string[] } = {}): Promise<Started> {
  await mkdir(dir, { recursive: true })
  const config = join(dir, 'llamagate.yaml')
  const root = options.root ?? PACKAGE_ROOT
  await writeFile(config, [
    `data_dir: ${join(dir, 'gateway')}`, 'port: 0', 'log_level: info', 'keep_alive: -1',
    `runtimes:\n  ${build.backend}: { bin: ${build.binDir} }`, `runtime: ${build.backend}`,
    `default_options: { num_ctx: ${shape.ctxPerSlot}, num_parallel: ${shape.parallel}${shape.threads !== undefined ? `, num_thread: ${shape.threads}` : ''} }`,
    `limits: { queue_length: 1000${options.maxLoaded !== undefined ? `, max_loaded_models: ${options.maxLoaded}` : ''}${options.limits ? `, ${options.limits}` : ''} }`,
    ...options.extra ?? [],
    // The models' llama-server flags: those imported now, or (argsFor) those a restart finds imported already.
    ...modelArgs(options.argsFor ?? Object.keys(models), shape.extraArgs ?? []),
  ].join('\n'))
  const cli = join(root, 'dist/core/cli/cli.js')
  for (const [name, file] of Object.entries(models)) {
    const imported = spawn(process.execPath, [cli, 'import', name, file, '--config', config], { stdio: 'inherit' })
    const code = await new Promise((resolve) => imported.once('exit', resolve))
    if (code !== 0) throw new Error(`llamagate import ${name} ${file} exited with ${String(code)}`)
  }
  return startGatewayProcess(config, join(dir, 'llamagate.log'), undefined, root)
}

function modelArgs (names: string[], args: string[]): string[] {
  if (names.length === 0 || args.length === 0) return []
  return ['models:', ...names.map((name) => `  ${JSON.stringify(name)}: { args: ${JSON.stringify(args)} }`)]
}

/** A folder of the given GGUFs (name → file) for router mode, linked rather than copied. */
export async function routerModelsDir (dir: string, models: Record<string, string>): Promise<string> {
  await mkdir(dir, { recursive: true })
  for (const [name, file] of Object.entries(models)) {
    const target = join(dir, `${name}.gguf`)
    await link(file, target).catch(() => symlink(file, target))
  }
  return dir
}

/**
 * Where LLAMAGATE_BENCH_PROFILE asks for gateway CPU profiles: each process is told SIGTERM and waited for (up to
 * 20 s), since node writes `--cpu-prof` only on a clean exit and killAll's SIGKILL leaves none.
 */
export async function stopForProfiles (children: ChildProcess[]): Promise<void> {
  if (!process.env.LLAMAGATE_BENCH_PROFILE) return
  await Promise.all(children.map((child) => new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve()
    const timer = setTimeout(resolve, 20_000)
    child.once('exit', () => { clearTimeout(timer); resolve() })
    child.kill('SIGTERM')
  })))
}

/** Kills each process's group (the router's and llamagate's runtimes with them). */
export function killAll (children: ChildProcess[]): void {
  for (const child of children) { try { process.kill(-child.pid!, 'SIGKILL') } catch { child.kill('SIGKILL') } }
}

/** What every real-size scenario is given: the build, the model and where to keep its setups' files. */
export interface ScenarioOptions {
  build: RuntimeBuild
  file: string
  label: string
  dir: string
  /** --threads for every llama-server; unset: llama-server's default. */
  threads?: number
  say: (line: string) => void
}

/** The three setups a real-size scenario compares. */
export const SIDE_BY_SIDE = ['direct', 'router', 'llamagate'] as const
export type SideBySide = (typeof SIDE_BY_SIDE)[number]

/**
 * Direct llama-server, its router and llamagate on one model with the same settings, with a pool of
 * `connections` to each and the model name each answers to. `close` stops them all.
 */
export async function startSideBySide (o: { build: RuntimeBuild, file: string, label: string, dir: string, shape: ServerShape, connections: number }): Promise<{ targets: Record<SideBySide, { pool: Pool, model: string }>, close: () => Promise<void> }> {
  const children: ChildProcess[] = []
  const pools: Pool[] = []
  const direct = new LlamaServer({ build: o.build, modelPath: o.file, alias: 'bench', ctxSize: o.shape.ctxPerSlot * o.shape.parallel, parallel: o.shape.parallel, threads: o.shape.threads })
  const close = async (): Promise<void> => {
    await Promise.all(pools.map((p) => p.close()))
    await direct.stop()
    killAll(children)
    await new Promise((r) => setTimeout(r, 1000)) // let the killed processes' memory go before the next scenario
  }
  try {
    await direct.start()
    const router = await startRouter(o.build, await routerModelsDir(join(o.dir, 'router-models'), { [o.label]: o.file }), o.shape)
    children.push(router.child)
    const gateway = await startGateway(join(o.dir, 'llamagate'), o.build, { 'bench/model': o.file }, o.shape)
    children.push(gateway.child)
    const target = (url: string, model: string): { pool: Pool, model: string } => {
      const pool = new Pool(url, { connections: o.connections })
      pools.push(pool)
      return { pool, model }
    }
    return {
      targets: { direct: target(direct.endpoint.address.baseUrl, 'bench'), router: target(router.url, router.models[0]!), llamagate: target(gateway.url, 'bench/model') },
      close,
    }
  } catch (err) {
    await close()
    throw err
  }
}
