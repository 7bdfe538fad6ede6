import type { Logger } from '../../core/base/logger.js'

/** What preloading needs of the scheduler: a load that takes no slot. */
export type LoadModel = (name: string, keepAliveMs: number) => Promise<void>

export interface PreloadEntry { name: string, keepAliveMs: number }

type PreloadState = { state: 'loading', attempt: number, lastError?: string } | { state: 'loaded' } | { state: 'waiting', attempt: number, lastError: string }

// A preload that fails is tried again (the runtime may still be building, a GPU busy): 5 s, 10 s ... up to a minute.
const RETRY_BASE_MS = 5000
const RETRY_MAX_MS = 60_000

/**
 * Loads config.yaml's `preload: true` models at start and keeps them loaded (their keep-alive, forever unless
 * set). Each failure is logged and tried again later; until every one is loaded, readiness says which are not.
 */
export class Preloader {
  private readonly states = new Map<string, PreloadState>()
  private readonly timers = new Set<NodeJS.Timeout>()
  private stopped = false

  constructor (private readonly entries: PreloadEntry[], private readonly load: LoadModel, private readonly log: Pick<Logger, 'info' | 'warn'>) {}

  start (): void {
    for (const entry of this.entries) void this.attempt(entry, 1)
  }

  /** No more tries (the server is closing). */
  stop (): void {
    this.stopped = true
    for (const timer of this.timers) clearTimeout(timer)
    this.timers.clear()
  }

  /** Why the preloads are not done, one sentence per model not loaded yet; empty when all are. */
  pending (): string[] {
    return this.entries.flatMap(({ name }) => {
      const s = this.states.get(name)
      if (s === undefined) return [`preloading ${name}: not started`]
      if (s.state === 'loaded') return []
      if (s.state === 'loading') return [`preloading ${name}${s.lastError ? ` (try ${s.attempt}; the last one failed: ${s.lastError})` : ''}`]
      return [`preloading ${name} failed ${s.attempt} time(s), trying again shortly: ${s.lastError}`]
    })
  }

  private async attempt (entry: PreloadEntry, attempt: number): Promise<void> {
    if (this.stopped) return
    const previous = this.states.get(entry.name)
    this.states.set(entry.name, { state: 'loading', attempt, ...(previous && 'lastError' in previous && previous.lastError ? { lastError: previous.lastError } : {}) })
    try {
      await this.load(entry.name, entry.keepAliveMs)
      this.states.set(entry.name, { state: 'loaded' })
      this.log.info({ model: entry.name }, 'preloaded')
    } catch (err) {
      if (this.stopped) return
      const lastError = err instanceof Error ? err.message : String(err)
      this.states.set(entry.name, { state: 'waiting', attempt, lastError })
      const delay = Math.min(RETRY_BASE_MS * 2 ** (attempt - 1), RETRY_MAX_MS)
      this.log.warn({ model: entry.name, attempt, retryInMs: delay }, `preloading ${entry.name} failed: ${lastError}`)
      const timer = setTimeout(() => { this.timers.delete(timer); void this.attempt(entry, attempt + 1) }, delay)
      timer.unref()
      this.timers.add(timer)
    }
  }
}
