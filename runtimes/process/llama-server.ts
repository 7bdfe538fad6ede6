import { accessSync, constants as fsConstants, rmSync } from 'node:fs'
import { constants } from 'node:os'
import type { ChildProcessWithoutNullStreams } from 'node:child_process'
import { RuntimeError } from '../../core/errors.js'
import type { Logger } from '../../core/logger.js'
import { RuntimeEndpoint } from '../endpoint/runtime-endpoint.js'
import { freePort } from './free-port.js'
import { healthStatus } from './health-probe.js'
import { killGroup } from './kill-group.js'
import { outputLines } from './output-lines.js'
import { SpareShell } from './spare-shell.js'
import { WATCHDOG } from './watchdog.js'
import type { RuntimeBuild } from '../types.js'


export interface LlamaServerOptions {
  build: RuntimeBuild
  modelPath: string
  /** The name llama-server answers with in `model` fields (`--alias`). */
  alias: string
  /** Total context: num_ctx × num_parallel (llama-server splits it between the slots). */
  ctxSize: number
  /** Slots, i.e. requests served at once. */
  parallel: number
  /** @default unset: llama-server's own default (all layers on the GPU where one is used) */
  nGpuLayers?: number
  /** --threads; unset, llama-server chooses (its physical cores). */
  threads?: number
  /** @default unset: llama-server's default (f16) */
  cacheTypeK?: string
  /** @default unset: llama-server's default (f16) */
  cacheTypeV?: string
  /** A Jinja chat template instead of the GGUF's (`--chat-template`). @default the GGUF's */
  chatTemplate?: string
  /** Serve embeddings (`--embeddings`). @default false */
  embeddings?: boolean
  /** `--pooling`; unset, the GGUF's. */
  pooling?: string
  /** Serve reranking (`--reranking`). @default false */
  reranking?: boolean
  /** `--batch-size` and `--ubatch-size` both: an embedding input must fit in one physical batch. @default llama-server's */
  batchSize?: number
  /** A vision projector GGUF (`--mmproj`). */
  projectorPath?: string
  /** @default a free loopback port, picked at start */
  port?: number
  /**
   * Listen on this Unix socket instead of a TCP port (llama-server's `--host <path>.sock`): no port to
   * race for, no TCP stack per token, and unreachable for other users of the machine. It must end in `.sock`
   * (how llama-server tells a socket from a host name); a path that does not, or is too long for a socket
   * address, falls back to a loopback port.
   */
  socketPath?: string
  /** How long a start may take before it is given up. @default 300000 */
  startTimeoutMs?: number
  log?: Logger
  /** RPC workers (`host:port`) the model's layers are split across (`--rpc`). @default none */
  rpcEndpoints?: string[]
  /** Each device's share of the layers (`--tensor-split`), RPC workers first. @default llama-server's (by free memory) */
  tensorSplit?: number[]
  /** Appended to the command line as is (an admin's escape hatch). @default [] */
  extraArgs?: string[]
}

export type ServerState = 'stopped' | 'starting' | 'ready' | 'stopping'
export interface ExitInfo { code: number | null, signal: string | null, expected: boolean, logTail: string[] }

const LOG_LINES = 50
// Small models load in tens of milliseconds: a coarse poll would dominate the cold start.
const POLL_MS = 5
// Lines after which /health is worth asking at once rather than at the next poll: llama-server says when it
// listens and when its model is loaded (in either order, depending on the release).
const READY_HINT = /listening on|model loaded|all slots are idle/
const STOP_GRACE_MS = 5000


// The shells llama-server is started from, one forked ahead of need (see SpareShell).
const shells = new SpareShell(WATCHDOG, 'llamagate-watchdog')
/**
 * When the next start's shell is forked: never during a start, and not the moment one ends. Forking the
 * gateway costs a core 2-4 ms and copy-on-write faults after; done while llama-server loaded, it slowed the
 * load by ~2 ms on 2 cores (21 cold starts side by side), and done as a start ends, the first request's first
 * token would wait for it. So: shortly after a start, at once after a llama-server exits (an unload often
 * comes before the next load), and no sooner than the start under way, if any, is over.
 */
const SPARE_AFTER_START_MS = 100
let startsUnderWay = 0
let spareTimer: NodeJS.Timeout | null = null

function prepareSpareLater (delayMs: number): void {
  if (spareTimer !== null || shells.hasSpare) return
  spareTimer = setTimeout(() => {
    spareTimer = null
    if (startsUnderWay > 0) prepareSpareLater(SPARE_AFTER_START_MS); else shells.prepare()
  }, delayMs)
  spareTimer.unref()
}

// sockaddr_un holds 108 bytes with the terminating NUL.
const MAX_SOCKET_PATH = 107

// Every process started and not yet exited, so that nothing is left behind when the gateway goes.
const live = new Set<LlamaServer>()

/**
 * One llama-server process for one model: started on a loopback port, ready when /health answers 200,
 * watched for a crash, stopped with SIGTERM to its process group then SIGKILL. The only code that spawns it.
 */
export class LlamaServer {
  private child: ChildProcessWithoutNullStreams | null = null
  private readonly lines: string[] = []
  private readonly exitListeners: Array<(info: ExitInfo) => void> = []
  private stopRequested = false
  private exited: Promise<ExitInfo> | null = null
  private starting: Promise<void> | null = null
  private currentState: ServerState = 'stopped'
  private currentPort = 0
  /** Wakes the readiness loop early when the log says the server may be ready. */
  private readyHint: (() => void) | null = null
  private readonly usesSocket: boolean
  private currentEndpoint: RuntimeEndpoint | null = null

  constructor (private readonly options: LlamaServerOptions) {
    this.usesSocket = options.socketPath !== undefined && Buffer.byteLength(options.socketPath) <= MAX_SOCKET_PATH &&
      options.socketPath.endsWith('.sock')
  }

  get state (): ServerState { return this.currentState }
  /** The loopback port it listens on; 0 before start. */
  get port (): number { return this.currentPort }
  /**
   * How to talk to it: the one client of this process, which knows its address (a Unix socket, or a loopback
   * port) and owns its connections. There from the start on; closed when the process exits.
   */
  get endpoint (): RuntimeEndpoint {
    if (this.currentEndpoint === null) throw new Error(`llama-server for "${this.options.alias}" was not started`)
    return this.currentEndpoint
  }
  /** llama-server's own pid (the watchdog shell execs it in place). */
  get pid (): number | undefined { return this.child?.pid }

  /** How many llama-servers this process runs now. */
  static liveCount (): number { return live.size }

  /** Stops every llama-server this process started. */
  static async stopAll (graceMs?: number): Promise<void> {
    await Promise.all([...live].map((s) => s.stop(graceMs)))
  }

  /** Forks the shell the next start will run from, so that the first cold start does not wait for the fork. */
  static prepareStart (): void { shells.prepare() }

  /** The pid of the shell waiting for the next start, if one is: the next llama-server gets this pid. */
  static sparePid (): number | undefined { return shells.pid }

  /** Ends the shell kept for the next start: the gateway is closing. */
  static releaseSpare (): void {
    if (spareTimer !== null) clearTimeout(spareTimer)
    spareTimer = null
    shells.close()
  }

  /** Called once when the process exits, asked to or not (`expected` says which), within milliseconds. */
  onExit (listener: (info: ExitInfo) => void): void { this.exitListeners.push(listener) }

  /** Its last log lines (stdout and stderr together), oldest first. */
  logTail (): string[] { return [...this.lines] }

  /** The command-line arguments, from what this build supports. */
  args (): string[] {
    const o = this.options
    const f = o.build.features
    // Host and port always explicit: the default port changes between releases (8080, then 9931).
    const host = this.usesSocket ? o.socketPath! : '127.0.0.1'
    const args = ['--model', o.modelPath, '--host', host, '--port', String(this.currentPort), '--alias', o.alias,
      '--ctx-size', String(o.ctxSize), '--parallel', String(o.parallel)]
    if (o.nGpuLayers !== undefined) args.push('--n-gpu-layers', String(o.nGpuLayers))
    if (o.threads !== undefined) args.push('--threads', String(o.threads))
    if (o.cacheTypeK) args.push('--cache-type-k', o.cacheTypeK)
    if (o.cacheTypeV) args.push('--cache-type-v', o.cacheTypeV)
    if (o.chatTemplate) args.push('--chat-template', o.chatTemplate)
    if (o.embeddings) args.push('--embeddings')
    if (o.pooling) args.push('--pooling', o.pooling)
    if (o.reranking) args.push('--reranking')
    if (o.batchSize !== undefined) args.push('--batch-size', String(o.batchSize), '--ubatch-size', String(o.batchSize))
    if (o.projectorPath) args.push('--mmproj', o.projectorPath)
    if (o.rpcEndpoints?.length) args.push('--rpc', o.rpcEndpoints.join(','))
    if (o.tensorSplit?.length) args.push('--tensor-split', o.tensorSplit.join(','))
    // Its Prometheus statistics (GET /metrics), which the gateway's /metrics re-exposes per model. Not looked up
    // in --help like the flags below: every llama-server that has --jinja has had --metrics longer.
    args.push('--metrics')
    if (f.jinja) args.push('--jinja')
    if (f.noWebui) args.push('--no-webui')
    // Flash attention pays off on GPUs; `auto` lets llama-server decide per device.
    if (f.flashAttn && o.build.backend !== 'cpu') args.push('--flash-attn', 'auto')
    // On a CPU, the warm-up (a decode of two tokens before serving) makes no request faster and delays every
    // cold start: on a 258 MiB model, start to listening 125 -> 107 ms, the first request's first token 143 ms
    // with or without it. On GPUs it takes one-time set-up off the first request, so it stays there.
    if (f.noWarmup && o.build.backend === 'cpu') args.push('--no-warmup')
    return [...args, ...(o.extraArgs ?? [])]
  }

  /** Starts the process and resolves when it serves. Concurrent callers share one start. */
  start (signal?: AbortSignal): Promise<void> {
    if (this.starting === null) {
      startsUnderWay++
      this.starting = this.doStart(signal).finally(() => {
        startsUnderWay--
        prepareSpareLater(SPARE_AFTER_START_MS)
      })
    }
    return this.starting
  }

  private async doStart (signal?: AbortSignal): Promise<void> {
    const { build, log } = this.options
    this.currentState = 'starting'
    // Synchronous on purpose (tens of microseconds from the page cache): on the cold start's path, each async
    // file operation waits for a libuv pool thread to wake, measured at up to a millisecond on a small VM.
    try {
      accessSync(build.serverPath, fsConstants.X_OK)
    } catch (err) {
      this.currentState = 'stopped'
      throw new RuntimeError(`model "${this.options.alias}" failed to start: cannot run llama-server: ${(err as Error).message}`, [], 'runtime_start_failed')
    }
    // On a socket, the port is only there because llama-server wants one; a stale socket file would fail the bind.
    if (this.usesSocket) rmSync(this.options.socketPath!, { force: true })
    this.currentPort = this.usesSocket ? 8080 : this.options.port ?? await freePort()
    this.currentEndpoint = new RuntimeEndpoint({
      name: this.options.alias,
      slots: this.options.parallel,
      address: this.usesSocket
        ? { baseUrl: 'http://localhost', socketPath: this.options.socketPath! }
        : { baseUrl: `http://127.0.0.1:${this.currentPort}`, socketPath: null },
    })
    const args = this.args()
    log?.info({ bin: build.serverPath, args }, 'starting llama-server')
    // Its own process group (detached), so that stop() reaches anything it starts; the watchdog pipe on stdin
    // covers the gateway's death. Node's spawn rather than execa, and from a shell forked beforehand: a cold
    // start waits on it, and execa's set-up measured ~4 ms, Node's fork 2-4 ms, of the ~20 ms a small model
    // takes to load. The next start's shell is forked after this start (prepareSpareLater).
    const child = shells.launch([build.serverPath, ...args])
    this.child = child
    live.add(this)
    // Writing is never done; ending it after the exit may raise EPIPE, which means nothing here.
    child.stdin.on('error', () => {})
    // stdout and stderr as one log, line by line.
    const lines = outputLines((line) => this.keepLine(line))
    for (const out of [child.stdout, child.stderr]) { out.setEncoding('utf8'); out.on('data', lines.push) }
    this.exited = new Promise<ExitInfo>((resolve) => {
      let spawnError: Error | null = null
      child.once('error', (err) => { spawnError = err })
      // 'close': the process is gone and its output read to the end.
      child.once('close', (code, sig) => {
        lines.flush()
        // A process that never ran (no `sh`, no permission) has no log: say what the system said.
        if (spawnError !== null) this.keepLine(`error: ${(spawnError as Error).message}`)
        // The watcher is left alone in the group: close its pipe so that it goes too.
        child.stdin.destroy()
        if (this.usesSocket) rmSync(this.options.socketPath!, { force: true })
        // Nothing is left to answer: pooled connections go, and a request asked for later fails at once.
        void this.currentEndpoint?.close()
        live.delete(this)
        prepareSpareLater(0)
        const info: ExitInfo = { code, signal: sig, expected: this.stopRequested, logTail: this.logTail() }
        this.currentState = 'stopped'
        for (const listener of this.exitListeners) {
          try { listener(info) } catch (err) { log?.warn({ err }, 'an exit listener of llama-server threw') }
        }
        resolve(info)
      })
    })
    try {
      await this.waitUntilReady(signal)
    } catch (err) {
      await this.stop()
      throw err
    }
    this.currentState = 'ready'
    // Debug: the scheduler says "model loaded" with the same facts, and each line costs a cold start time.
    log?.debug({ pid: this.pid, port: this.currentPort, model: this.options.alias }, 'llama-server ready')
  }

  private keepLine (line: string): void {
    if (this.readyHint !== null && READY_HINT.test(line)) this.readyHint()
    this.lines.push(line)
    if (this.lines.length > LOG_LINES) this.lines.shift()
    this.options.log?.debug({ pid: this.child?.pid }, line)
  }

  private async waitUntilReady (signal?: AbortSignal): Promise<void> {
    const timeoutMs = this.options.startTimeoutMs ?? 300_000
    const deadline = Date.now() + timeoutMs
    let exit: ExitInfo | null = null
    void this.exited!.then((info) => { exit = info })
    // One connection per poll (llama-server may not keep it), to the socket or the port.
    const target = this.usesSocket ? { socketPath: this.options.socketPath! } : { port: this.currentPort }
    for (;;) {
      if (exit) {
        if (this.stopRequested) throw new RuntimeError(`model "${this.options.alias}" was stopped while it started`, this.logTail(), 'runtime_stopped')
        throw this.startError(`llama-server exited during start-up (${describeExit(exit)})`)
      }
      if (signal?.aborted) throw signal.reason
      if (Date.now() > deadline) throw this.startError(`llama-server did not become ready within ${Math.round(timeoutMs / 1000)} s`)
      try {
        if (await healthStatus(target, 1000) === 200) return
      } catch {
        // Not listening yet.
      }
      await new Promise<void>((resolve) => {
        const wake = (): void => { clearTimeout(timer); this.readyHint = null; resolve() }
        const timer = setTimeout(wake, POLL_MS)
        this.readyHint = wake
      })
    }
  }

  private startError (what: string): RuntimeError {
    // llama-server says why in its last lines ("failed to load model", "couldn't bind").
    const reasons = this.lines.filter((l) => /error|fail|couldn't|cannot|unable|invalid|exiting|not found/i.test(l)).slice(-5)
    const detail = (reasons.length > 0 ? reasons : this.lines.slice(-3)).map((l) => l.trim()).join(' | ')
    return new RuntimeError(`model "${this.options.alias}" failed to start: ${what}${detail ? `: ${detail}` : ''}`, this.logTail(), 'runtime_start_failed')
  }

  /**
   * SIGTERM to the process group, SIGKILL after the grace period; a grace of 0 is SIGKILL at once (an idle
   * server has nothing to finish, and tears down in half the time). Idempotent; resolves once it has exited.
   */
  async stop (graceMs = STOP_GRACE_MS): Promise<void> {
    const child = this.child
    if (!child || !this.exited) return
    this.stopRequested = true
    if (this.currentState !== 'stopped') this.currentState = 'stopping'
    killGroup(child.pid, graceMs > 0 ? 'SIGTERM' : 'SIGKILL')
    const timer = setTimeout(() => killGroup(child.pid, 'SIGKILL'), Math.max(graceMs, 0))
    await this.exited
    clearTimeout(timer)
  }
}


/** "exit code 1", "killed by SIGKILL", "exit code 137, SIGKILL" (a shell reports death by signal N as 128+N). */
export function describeExit (info: Pick<ExitInfo, 'code' | 'signal'>): string {
  if (info.signal) return `killed by ${info.signal}`
  const code = info.code ?? -1
  const bySignal = code > 128 ? Object.entries(constants.signals).find(([, n]) => n === code - 128)?.[0] : undefined
  return bySignal ? `exit code ${code}, ${bySignal}` : `exit code ${code}`
}
