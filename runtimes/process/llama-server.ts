import { accessSync, closeSync, constants as fsConstants, openSync, rmSync, writeSync } from 'node:fs'
import { constants } from 'node:os'
import type { ChildProcessWithoutNullStreams } from 'node:child_process'
import { RuntimeError } from '../../core/base/errors.js'
import type { Logger } from '../../core/base/logger.js'
import { loadHttpClient } from '../endpoint/http-pool.js'
import { RuntimeEndpoint } from '../endpoint/runtime-endpoint.js'
import type { RuntimeBuild } from '../types.js'
import { freePort } from './free-port.js'
import { healthStatus } from './health-probe.js'
import { killGroup } from './kill-group.js'
import { allocatorEnv } from './malloc-tunables.js'
import { outputLines } from './output-lines.js'
import { nextRuntimeState, type RuntimeState } from './runtime-states.js'
import { runtimeProcesses } from './runtime-processes.js'
import { serverArgs } from './server-args.js'
import type { RuntimeSpawnOptions } from './spawn-options.js'
import { withEnv } from './env-command.js'

/** A spawn's options, and what the launcher decides around them: the build, where it listens, how long it may start. */
export interface LlamaServerOptions extends RuntimeSpawnOptions {
  build: RuntimeBuild
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
  /** Variables it starts with over the gateway's environment (its runtime kind's). @default none */
  env?: Readonly<Record<string, string>>
  log?: Logger
}

export interface ExitInfo { code: number | null, signal: string | null, expected: boolean, logTail: string[] }

const LOG_LINES = 50
// Small models load in tens of milliseconds: a coarse first poll would dominate the cold start. Later polls back
// off (a connection attempt every 5 ms costs more CPU than the load), as READY_HINT's lines wake the wait at once.
const FIRST_POLL_MS = 5
const MAX_POLL_MS = 100
// Lines after which /health is worth asking at once rather than at the next poll: llama-server says when it
// listens and when its model is loaded (in either order, depending on the release).
const READY_HINT = /listening on|model loaded|all slots are idle/
// What a build with --load-gate (runtimes/build/patches) logs once the model's vocabulary is read and it waits.
const PARKED_LINE = /waiting for a go-ahead at /
const STOP_GRACE_MS = 5000
// sockaddr_un holds 108 bytes with the terminating NUL.
const MAX_SOCKET_PATH = 107

/**
 * One llama-server process for one model: started on a Unix socket or a loopback port, ready when /health answers
 * 200, watched for a crash, stopped with SIGTERM to its process group then SIGKILL. The only code that spawns it;
 * `runtimeProcesses` knows every one that runs.
 */
export class LlamaServer {
  private child: ChildProcessWithoutNullStreams | null = null
  private readonly lines: string[] = []
  private readonly exitListeners: Array<(info: ExitInfo) => void> = []
  private stopRequested = false
  private exited: Promise<ExitInfo> | null = null
  private starting: Promise<void> | null = null
  /**
   * Where its process is, on the one table of a runtime's life (runtime-states.ts): made → preparing → prepared at its
   * gate → starting, or made → starting; then ready, and stopping → stopped (a failure or a crash: straight to stopped).
   */
  private currentState: RuntimeState = 'made'
  private currentPort = 0
  /** Wakes the readiness loop early when the log says the server may be ready. */
  private readyHint: (() => void) | null = null
  /** Log lines that said so: one that came while a probe was out is not missed. */
  private readyHints = 0
  private readonly usesSocket: boolean
  private currentEndpoint: RuntimeEndpoint | null = null
  /** The FIFO a start prepared up to its gate (prepare()) waits at until start() writes its byte; null: no gate. */
  private gatePath: string | null = null
  /** Wakes prepare() once the process says it waits at its gate (prepared). */
  private onPrepared: (() => void) | null = null
  /** The one preparation, that start() loads on from. */
  private preparation: Promise<void> | null = null
  private preparedAfterMs: number | null = null

  constructor (private readonly options: LlamaServerOptions) {
    this.usesSocket = options.socketPath !== undefined && Buffer.byteLength(options.socketPath) <= MAX_SOCKET_PATH &&
      options.socketPath.endsWith('.sock')
  }

  get state (): RuntimeState { return this.currentState }
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
  get backend (): string { return this.options.build.backend }
  /** Its build keeps the prompt caches of requests with different `cache_salt`s apart (llamagate's patch set). */
  get separatesCaches (): boolean { return this.options.build.features.cacheSalt }
  /** What its slot saves can do: carry context checkpoints, and take what its RAM prompt cache holds (the patch set). */
  get saves (): { checkpoints: boolean, cachedPrompts: boolean } {
    const { slotCheckpoints, cachedPromptSaves } = this.options.build.features
    return { checkpoints: slotCheckpoints, cachedPrompts: cachedPromptSaves }
  }

  /** Called once when the process exits, asked to or not (`expected` says which), within milliseconds. */
  onExit (listener: (info: ExitInfo) => void): void { this.exitListeners.push(listener) }

  /** Its last log lines (stdout and stderr together), oldest first. */
  logTail (): string[] { return [...this.lines] }

  /** The command-line arguments, from what this build supports. */
  args (): string[] {
    const host = this.usesSocket ? this.options.socketPath! : '127.0.0.1'
    const args = serverArgs(this.options, this.options.build, { host, port: this.currentPort })
    return this.gatePath !== null ? [...args, '--load-gate', this.gatePath] : args
  }

  /**
   * Whether prepare() can start it ahead: its build waits at a gate before the model's tensors (llamagate's patch
   * set), and it listens on a socket in the gateway's private folder, where the gate's FIFO goes beside it.
   */
  get preparesAhead (): boolean { return this.options.build.features.loadGate && this.usesSocket }

  /** How long prepare() took, from the spawn to the gate (what a load prepared ahead no longer waits for); null before. */
  get preparedInMs (): number | null { return this.preparedAfterMs }

  /**
   * The variables it starts with over the gateway's environment: on Linux, glibc's allocator on huge pages
   * (malloc-tunables.ts); then its runtime kind's, which win.
   */
  env (platform: NodeJS.Platform = process.platform, inherited = process.env.GLIBC_TUNABLES): Record<string, string> {
    return { ...allocatorEnv(platform, inherited), ...this.options.env }
  }

  /**
   * Starts the process as far as it goes without taking the model's memory (preparesAhead: the model's metadata and
   * vocabulary read, no tensor allocated, the context not made) and resolves there: start() then loads on from that
   * point, so that a swap waits only for the rest. Without a gate it starts nothing and resolves at once. A process
   * prepared this way is stopped like a starting one. Once only; start() after it.
   * @throws RuntimeError when the process exits, or does not reach its gate within the start timeout
   */
  prepare (): Promise<void> {
    if (!this.preparesAhead || this.starting !== null) return Promise.resolve()
    if (this.preparation === null) {
      this.gatePath = this.options.socketPath!.replace(/\.sock$/, '.gate')
      const began = performance.now()
      this.preparation = runtimeProcesses.duringStart(async () => {
        await this.spawn('preparing')
        await this.untilPrepared()
        this.preparedAfterMs = performance.now() - began
      })
      // start() hears a failed preparation itself: nobody else need catch it.
      this.preparation.catch(() => {})
    }
    return this.preparation
  }

  /** Starts the process (or, after prepare(), lets it load on) and resolves when it serves. Concurrent callers share one start. */
  start (signal?: AbortSignal): Promise<void> {
    this.starting ??= runtimeProcesses.duringStart(async () => {
      if (this.preparation !== null) await this.goAhead()
      else await this.spawn('starting')
      await this.ready(signal)
    })
    return this.starting
  }

  /** A prepared process loads on: once at its gate, the gate's FIFO gets its byte. */
  private async goAhead (): Promise<void> {
    await this.preparation
    // Stopped while it waited at its gate: the start ends as the stop says (or as its exit does).
    if (this.currentState !== 'prepared') throw this.exitError()
    this.transition('starting')
    try {
      // Non-blocking: the process holds its FIFO open (read-write) from before its line, so this open finds it.
      const fd = openSync(this.gatePath!, fsConstants.O_WRONLY | fsConstants.O_NONBLOCK)
      try { writeSync(fd, 'y') } finally { closeSync(fd) }
    } catch (err) {
      // Gone since, its exit not yet heard: nobody holds its FIFO open to read the byte.
      const error = this.startError(`its gate took no go-ahead: ${(err as Error).message}`)
      await this.stop()
      throw error
    }
  }

  /** Resolves once the process logs that it waits at its gate (prepared). @throws RuntimeError when it exits first, or past the start timeout */
  private async untilPrepared (): Promise<void> {
    const timeoutMs = this.options.startTimeoutMs ?? 300_000
    let timer: NodeJS.Timeout | undefined
    try {
      await Promise.race([
        new Promise<void>((resolve) => { if (this.currentState === 'prepared') resolve(); else this.onPrepared = resolve }),
        this.exited!.then(() => { throw this.exitError() }),
        new Promise<never>((_resolve, reject) => { timer = setTimeout(() => reject(this.startError(`llama-server did not read its model's vocabulary within ${Math.round(timeoutMs / 1000)} s`)), timeoutMs) }),
      ])
    } catch (err) {
      await this.stop()
      throw err
    } finally {
      clearTimeout(timer)
      this.onPrepared = null
    }
  }

  private async ready (signal?: AbortSignal): Promise<void> {
    const { log } = this.options
    try {
      await this.waitUntilReady(signal)
    } catch (err) {
      await this.stop()
      throw err
    }
    // A stop during the start wins over its readiness: the start then ends as the stop says.
    if (this.currentState !== 'starting') throw new RuntimeError(`model "${this.options.alias}" was stopped while it started`, this.logTail(), 'runtime_stopped')
    this.transition('ready')
    // Debug: the scheduler says "model loaded" with the same facts, and each line costs a cold start time.
    log?.debug({ pid: this.pid, port: this.currentPort, model: this.options.alias }, 'llama-server ready')
  }

  /** Spawns the process, which goes to its gate first (`preparing`) or loads at once (`starting`). */
  private async spawn (to: 'preparing' | 'starting'): Promise<void> {
    const { build, log } = this.options
    this.transition(to)
    // Synchronous on purpose: on the cold start's path, an async file call waits for a libuv pool thread to wake.
    try {
      accessSync(build.serverPath, fsConstants.X_OK)
    } catch (err) {
      this.transition('stopped')
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
    // covers the gateway's death. Node's spawn rather than execa, from a shell forked beforehand: a cold start
    // waits on every set-up step of the spawn.
    const child = runtimeProcesses.launch(this, withEnv([build.serverPath, ...args], this.env()))
    this.child = child
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
        // A process stopped at its gate leaves its FIFO behind (it removes it once it has read its byte).
        if (this.gatePath !== null) rmSync(this.gatePath, { force: true })
        // Nothing is left to answer: pooled connections go, and a request asked for later fails at once.
        void this.currentEndpoint?.close()
        runtimeProcesses.exited(this)
        const info: ExitInfo = { code, signal: sig, expected: this.stopRequested, logTail: this.logTail() }
        this.transition('stopped')
        for (const listener of this.exitListeners) {
          try { listener(info) } catch (err) { log?.warn({ err }, 'an exit listener of llama-server threw') }
        }
        resolve(info)
      })
    })
    // The first load's wait is idle time for this thread: what the first request would load next is loaded now.
    setImmediate(loadHttpClient)
  }

  /** Moves to `to`. @throws IllegalTransitionError when the table does not lead there: a bug in the supervisor */
  private transition (to: RuntimeState): void {
    this.currentState = nextRuntimeState(`llama-server of model "${this.options.alias}"`, this.currentState, to)
  }

  private keepLine (line: string): void {
    if (this.currentState === 'starting' && READY_HINT.test(line)) {
      this.readyHints++
      this.readyHint?.()
    }
    if (this.currentState === 'preparing' && PARKED_LINE.test(line)) {
      this.transition('prepared')
      this.onPrepared?.()
    }
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
    let pollMs = FIRST_POLL_MS
    for (;;) {
      if (exit) throw this.exitError(exit)
      if (signal?.aborted) throw signal.reason
      if (Date.now() > deadline) throw this.startError(`llama-server did not become ready within ${Math.round(timeoutMs / 1000)} s`)
      const hints = this.readyHints
      try {
        if (await healthStatus(target, 1000) === 200) return
      } catch {
        // Not listening yet.
      }
      if (this.readyHints !== hints) continue
      await new Promise<void>((resolve) => {
        const wake = (): void => { clearTimeout(timer); this.readyHint = null; resolve() }
        const timer = setTimeout(wake, pollMs)
        this.readyHint = wake
      })
      pollMs = Math.min(pollMs * 2, MAX_POLL_MS)
    }
  }

  /** Why a start ended with the process's exit: stopped on purpose, or its own failure. */
  private exitError (exit?: ExitInfo): RuntimeError {
    if (this.stopRequested) return new RuntimeError(`model "${this.options.alias}" was stopped while it started`, this.logTail(), 'runtime_stopped')
    return this.startError(`llama-server exited during start-up${exit ? ` (${describeExit(exit)})` : ''}`)
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
    // Gone already: its exit is all there is to wait for. Stopping already: asked again, maybe sooner (a grace of 0).
    if (this.currentState === 'stopped') { await this.exited; return }
    if (this.currentState !== 'stopping') this.transition('stopping')
    killGroup(child, graceMs > 0 ? 'SIGTERM' : 'SIGKILL')
    const timer = setTimeout(() => killGroup(child, 'SIGKILL'), Math.max(graceMs, 0))
    await this.exited
    clearTimeout(timer)
  }
}


/** "exit code 1", "killed by SIGKILL", "exit code 137, SIGKILL" (a shell reports death by signal N as 128+N). */
function describeExit (info: Pick<ExitInfo, 'code' | 'signal'>): string {
  if (info.signal) return `killed by ${info.signal}`
  const code = info.code ?? -1
  const bySignal = code > 128 ? Object.entries(constants.signals).find(([, n]) => n === code - 128)?.[0] : undefined
  return bySignal ? `exit code ${code}, ${bySignal}` : `exit code ${code}`
}
