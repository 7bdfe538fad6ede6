import { setTimeout as sleep } from 'node:timers/promises'
import lockfile from 'proper-lockfile'
import { expireLock, ownerIsGone } from './lock-owner.js'

export interface TakeLockOptions {
  /** A lock not refreshed for this long is taken over (its holder died, perhaps on another host). */
  staleMs: number
  /** How long to wait while another holder has it: 0 fails at once, Infinity waits as long as the holder lives. */
  waitMs: number
  /** Stops the wait: rejects with its reason, and nothing is held. */
  signal?: AbortSignal
  /** Called once, when the lock is found taken and the wait begins. */
  onWait?: () => void
  /** The lock was taken over by someone else while held. */
  onCompromised: (err: Error) => void
}

/**
 * Takes the cross-process lock at `lockPath` (proper-lockfile), waiting for its holder where asked. Each try
 * first asks whether the recorded holder (`<lockPath>.owner`) is a dead process of this host: a writer killed
 * mid-pull is taken over at once instead of after the staleness period, also by one that was already waiting.
 * @returns the unlock function
 * @throws proper-lockfile's ELOCKED error when the lock is still held after `waitMs`; the signal's reason
 */
export async function takeLock (lockPath: string, opts: TakeLockOptions): Promise<() => Promise<void>> {
  const deadline = Date.now() + opts.waitMs
  let delay = 50
  let waiting = false
  for (;;) {
    if (opts.signal?.aborted) throw opts.signal.reason
    if (await ownerIsGone(`${lockPath}.owner`, `${lockPath}.lock`)) await expireLock(`${lockPath}.lock`)
    try {
      const unlock = await lockfile.lock(lockPath, { stale: opts.staleMs, realpath: false, retries: 0, onCompromised: opts.onCompromised })
      // Left while the lock was being taken: give it straight back, so that a client gone holds nothing.
      if (opts.signal?.aborted) {
        await unlock().catch(() => {})
        throw opts.signal.reason
      }
      return unlock
    } catch (err) {
      if ((err as { code?: string }).code !== 'ELOCKED' || Date.now() >= deadline) throw err
    }
    if (!waiting) {
      waiting = true
      opts.onWait?.()
    }
    // Short at first (a writer about to release), then every half second: a few stats a second per waiter.
    await sleep(Math.max(0, Math.min(delay, deadline - Date.now())), undefined, { signal: opts.signal }).catch(() => {})
    delay = Math.min(500, delay * 1.5)
  }
}
