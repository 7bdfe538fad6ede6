import { setTimeout as sleep } from 'node:timers/promises'
import { constants } from 'node:os'
import { execa, type ResultPromise } from 'execa'
import { RuntimeError } from '../core/errors.js'
import { freePort } from './free-port.js'
import type { RuntimeBuild } from './types.js'

export interface Logger { debug(o: unknown, m?: string): void, info(o: unknown, m?: string): void, warn(o: unknown, m?: string): void }

export interface LlamaServerOptions {
  build: RuntimeBuild
  modelPath: string
  /** The name llama-server answers with in `model` fields. */
  alias: string
  /** Total context: num_ctx × num_parallel. */
  ctxSize: number
  parallel: number
  nGpuLayers?: number
  cacheTypeK?: string
  cacheTypeV?: string
  /** @default a free loopback port */
  port?: number
  /** @default 300000 */
  startTimeoutMs?: number
  log?: Logger
  extraArgs?: string[]
}

export type ServerState = 'stopped' | 'starting' | 'ready' | 'stopping'
export interface ExitInfo { code: number | null, signal: string | null, expected: boolean, logTail: string[] }

const LOG_LINES = 50
// Small models load in tens of milliseconds: a coarse poll would dominate the cold start.
const POLL_MS = 5
const STOP_GRACE_MS = 5000

// Every process started and not yet exited, so that nothing is left behind when the gateway goes.
const live = new Set<LlamaServer>()

/**
 * One llama-server process for one model: started on a loopback port, ready when /health answers 200,
 * watched for a crash, stopped with SIGTERM to its process group then SIGKILL. The only code that spawns it.
 */
export class LlamaServer {
  private child: ResultPromise | null = null
  private readonly lines: string[] = []
  private readonly exitListeners: Array<(info: ExitInfo) => void> = []
  private stopRequested = false
  private exited: Promise<ExitInfo> | null = null
  private starting: Promise<void> | null = null
  state: ServerState = 'stopped'
  port = 0

  constructor (private readonly options: LlamaServerOptions) {}

  get baseUrl (): string { return `http://127.0.0.1:${this.port}` }
  get pid (): number | undefined { return this.child?.pid }

  /** Stops every llama-server this process started. */
  static async stopAll (): Promise<void> {
    await Promise.all([...live].map((s) => s.stop()))
  }

  onExit (listener: (info: ExitInfo) => void): void { this.exitListeners.push(listener) }

  logTail (): string[] { return [...this.lines] }

  /** The command-line arguments, from what this build supports. */
  args (): string[] {
    const o = this.options
    const f = o.build.features
    const args = ['--model', o.modelPath, '--host', '127.0.0.1', '--port', String(this.port), '--alias', o.alias,
      '--ctx-size', String(o.ctxSize), '--parallel', String(o.parallel)]
    if (o.nGpuLayers !== undefined) args.push('--n-gpu-layers', String(o.nGpuLayers))
    if (o.cacheTypeK) args.push('--cache-type-k', o.cacheTypeK)
    if (o.cacheTypeV) args.push('--cache-type-v', o.cacheTypeV)
    if (f.jinja) args.push('--jinja')
    if (f.noWebui) args.push('--no-webui')
    // Flash attention needs a GPU backend to pay off; `auto` lets llama-server decide per device.
    if (f.flashAttn && o.build.backend !== 'cpu') args.push('--flash-attn', 'auto')
    return [...args, ...(o.extraArgs ?? [])]
  }

  /** Starts the process and resolves when it serves. Concurrent callers share one start. */
  start (signal?: AbortSignal): Promise<void> {
    this.starting ??= this.doStart(signal)
    return this.starting
  }

  private async doStart (signal?: AbortSignal): Promise<void> {
    const { build, log } = this.options
    this.port = this.options.port ?? await freePort()
    this.state = 'starting'
    const args = this.args()
    log?.info({ bin: build.serverPath, args }, 'starting llama-server')
    const child = execa(build.serverPath, args, {
      // Its own process group, so that stop() reaches anything it starts; `cleanup` still kills it if the
      // gateway exits without closing.
      detached: true, cleanup: true, reject: false, stdin: 'ignore', buffer: false, all: true,
    })
    this.child = child
    live.add(this)
    let pending = ''
    child.all!.setEncoding('utf8')
    child.all!.on('data', (chunk: string) => {
      const parts = (pending + chunk).split('\n')
      pending = parts.pop()!
      for (const line of parts) this.keepLine(line)
    })
    this.exited = child.then((result) => {
      if (pending) this.keepLine(pending)
      // A process that never ran (missing binary, no permission) has no log: say what the system said.
      if (result.exitCode === undefined && result.signal === undefined) this.keepLine(`error: ${result.originalMessage ?? result.shortMessage}`)
      live.delete(this)
      const signalName = result.signal ?? null
      const info: ExitInfo = { code: result.exitCode ?? null, signal: signalName, expected: this.stopRequested, logTail: this.logTail() }
      this.state = 'stopped'
      for (const listener of this.exitListeners) listener(info)
      return info
    })
    try {
      await this.waitUntilReady(signal)
    } catch (err) {
      await this.stop()
      throw err
    }
    this.state = 'ready'
    log?.info({ pid: this.pid, port: this.port, model: this.options.alias }, 'llama-server ready')
  }

  private keepLine (line: string): void {
    this.lines.push(line)
    if (this.lines.length > LOG_LINES) this.lines.shift()
    this.options.log?.debug({ pid: this.child?.pid }, line)
  }

  private async waitUntilReady (signal?: AbortSignal): Promise<void> {
    const deadline = Date.now() + (this.options.startTimeoutMs ?? 300_000)
    let exit: ExitInfo | null = null
    void this.exited!.then((info) => { exit = info })
    for (;;) {
      if (exit) throw this.startError(`llama-server exited during start-up (${describeExit(exit)})`)
      if (signal?.aborted) throw signal.reason
      if (Date.now() > deadline) throw this.startError(`llama-server did not become ready within ${Math.round((this.options.startTimeoutMs ?? 300_000) / 1000)} s`)
      try {
        const res = await fetch(`${this.baseUrl}/health`, { signal: AbortSignal.timeout(1000) })
        await res.body?.cancel()
        if (res.status === 200) return
      } catch {
        // Not listening yet.
      }
      await sleep(POLL_MS)
    }
  }

  private startError (what: string): RuntimeError {
    // llama-server says why in its last lines ("failed to load model", "couldn't bind").
    const reasons = this.lines.filter((l) => /error|fail|couldn't|cannot|unable|invalid|exiting/i.test(l)).slice(-5)
    const detail = (reasons.length > 0 ? reasons : this.lines.slice(-3)).map((l) => l.trim()).join(' | ')
    return new RuntimeError(`model "${this.options.alias}" failed to start: ${what}${detail ? `: ${detail}` : ''}`, this.logTail(), 'runtime_start_failed')
  }

  /** SIGTERM to the process group, SIGKILL after the grace period. Idempotent. */
  async stop (graceMs = STOP_GRACE_MS): Promise<void> {
    const child = this.child
    if (!child || !this.exited) return
    this.stopRequested = true
    if (this.state !== 'stopped') this.state = 'stopping'
    killGroup(child.pid, 'SIGTERM')
    const timer = setTimeout(() => killGroup(child.pid, 'SIGKILL'), graceMs)
    await this.exited
    clearTimeout(timer)
  }
}

function killGroup (pid: number | undefined, signal: NodeJS.Signals): void {
  if (pid === undefined) return
  try {
    process.kill(-pid, signal)
  } catch {
    try { process.kill(pid, signal) } catch { /* already gone */ }
  }
}

export function describeExit (info: Pick<ExitInfo, 'code' | 'signal'>): string {
  if (info.signal) return `killed by ${info.signal}`
  const code = info.code ?? -1
  // A shell reports death by signal N as 128+N.
  const bySignal = code > 128 ? Object.entries(constants.signals).find(([, n]) => n === code - 128)?.[0] : undefined
  return bySignal ? `exit code ${code}, ${bySignal}` : `exit code ${code}`
}
