import { linkedSignal } from '../../core/base/linked-signal.js'

/** What the watchdog reads of a runtime: one mark per busy slot (runtimes/endpoint's `slotProgress`). */
export interface ProgressSource {
  slotProgress(signal: AbortSignal): Promise<string[]>
}

export interface ProgressWatchdogOptions {
  source: ProgressSource
  /** How long a busy runtime may go without answering or without any slot moving on. */
  timeoutMs: number
  /** Whether requests hold slots now: an idle runtime is not asked anything. */
  busy(): boolean
  /** Called once, with what was seen, when the runtime is stuck; the watchdog has stopped by then. */
  onStuck(why: string): void
}

/**
 * Watches one busy runtime for progress: while requests hold its slots it asks llama-server what each busy slot
 * has done, a few times per timeout. A runtime whose main loop does not answer for the whole timeout, or whose
 * busy slots all stay where they were for it, is stuck: a request there would wait forever, and so would every
 * request queued behind it.
 */
export class ProgressWatchdog {
  private timer: NodeJS.Timeout | null = null
  private readonly probe = new AbortController()
  private lastMarks = ''
  private movedAt = Date.now()
  private stopped = false

  constructor (private readonly options: ProgressWatchdogOptions) {}

  start (): void {
    this.schedule()
  }

  stop (): void {
    this.stopped = true
    if (this.timer !== null) clearTimeout(this.timer)
    this.timer = null
    this.probe.abort()
  }

  private schedule (): void {
    if (this.stopped) return
    this.timer = setTimeout(() => { void this.check() }, Math.max(50, Math.floor(this.options.timeoutMs / 4)))
    this.timer.unref()
  }

  private async check (): Promise<void> {
    const { source, timeoutMs, busy } = this.options
    if (!busy()) {
      // Idle: the next busy spell is measured from its own start.
      this.lastMarks = ''
      this.movedAt = Date.now()
      this.schedule()
      return
    }
    const asked = Date.now()
    const timeout = AbortSignal.timeout(timeoutMs)
    const linked = linkedSignal([this.probe.signal, timeout])
    let marks: string[]
    try {
      marks = await source.slotProgress(linked.signal)
    } catch (err) {
      if (this.stopped) return
      if (timeout.aborted) {
        this.stuck(`it answered nothing for ${seconds(Date.now() - asked)}`)
        return
      }
      // Not an answer either way (the runtime is exiting, or refused the question): its exit is handled elsewhere.
      this.schedule()
      return
    } finally {
      linked.unlink()
    }
    if (this.stopped) return
    const now = Date.now()
    const key = marks.join(',')
    if (marks.length === 0 || key !== this.lastMarks) {
      this.lastMarks = key
      this.movedAt = now
    } else if (now - this.movedAt >= timeoutMs) {
      this.stuck(`no token was read or generated for ${seconds(now - this.movedAt)}`)
      return
    }
    this.schedule()
  }

  private stuck (why: string): void {
    this.stop()
    this.options.onStuck(why)
  }
}

function seconds (ms: number): string {
  return ms >= 120_000 ? `${Math.round(ms / 60_000)} min` : `${Math.round(ms / 1000)} s`
}
