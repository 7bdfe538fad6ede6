import type { ChildProcessWithoutNullStreams } from 'node:child_process'
import { SpareShell } from './spare-shell.js'
import { WATCHDOG } from './watchdog.js'

/** A started process, as far as stopping everything goes. */
interface Stoppable { stop(graceMs?: number): Promise<void> }

// The next start's shell is forked this long after a start ends: not at once, or the first request's first token
// would wait for the fork.
const SPARE_AFTER_START_MS = 100

/**
 * Every llama-server this gateway process runs, and the shell the next one starts from. One for the whole process
 * (`runtimeProcesses`): nothing may be left behind when the gateway goes, whoever started it, and the spare shell is
 * forked only while no start is under way (a fork takes a core from the load), shortly after one ends, and at once
 * after a llama-server exits (an unload often comes before the next load).
 */
class RuntimeProcesses {
  private readonly live = new Set<Stoppable>()
  private readonly shells = new SpareShell(WATCHDOG, 'llamagate-watchdog')
  private startsUnderWay = 0
  private spareTimer: NodeJS.Timeout | null = null

  /** How many llama-servers this process runs now. */
  liveCount (): number { return this.live.size }

  /** Stops every llama-server this process started. */
  async stopAll (graceMs?: number): Promise<void> {
    await Promise.all([...this.live].map((s) => s.stop(graceMs)))
  }

  /** Forks the shell the next start will run from, so that the first cold start does not wait for the fork. */
  prepareStart (): void { this.shells.prepare() }

  /** The pid of the shell waiting for the next start, if one is: the next llama-server gets this pid. */
  sparePid (): number | undefined { return this.shells.pid }

  /** Ends the shell kept for the next start: the gateway is closing. */
  releaseSpare (): void {
    if (this.spareTimer !== null) clearTimeout(this.spareTimer)
    this.spareTimer = null
    this.shells.close()
  }

  /** Runs a start: no spare shell is forked while it is under way, and one is shortly after it ends. */
  async duringStart (start: () => Promise<void>): Promise<void> {
    this.startsUnderWay++
    try {
      await start()
    } finally {
      this.startsUnderWay--
      this.prepareSpareLater(SPARE_AFTER_START_MS)
    }
  }

  /** Runs the command under the watchdog, from the spare shell when one waits; `owner` is live until `exited(owner)`. */
  launch (owner: Stoppable, command: readonly string[]): ChildProcessWithoutNullStreams {
    const child = this.shells.launch(command)
    this.live.add(owner)
    return child
  }

  /** The owner's process is gone. */
  exited (owner: Stoppable): void {
    this.live.delete(owner)
    this.prepareSpareLater(0)
  }

  private prepareSpareLater (delayMs: number): void {
    if (this.spareTimer !== null || this.shells.hasSpare) return
    this.spareTimer = setTimeout(() => {
      this.spareTimer = null
      if (this.startsUnderWay > 0) this.prepareSpareLater(SPARE_AFTER_START_MS); else this.shells.prepare()
    }, delayMs)
    this.spareTimer.unref()
  }
}

/** The one supervisor of this process's llama-servers. */
export const runtimeProcesses = new RuntimeProcesses()
