import { setTimeout as sleep } from 'node:timers/promises'

/**
 * Waits until `check` gives something truthy, polling every `intervalMs`, and returns it. Past `timeoutMs` it
 * throws, naming what it waited for, so that a wait that never ends fails by itself instead of running into the
 * file's timeout. The defaults leave a loaded 2-core machine plenty of room: a wait that ends is quick; one
 * that does not, fails.
 */
export async function until<T> (what: string, check: () => T | Promise<T>, timeoutMs = 30_000, intervalMs = 25): Promise<NonNullable<T>> {
  const started = Date.now()
  for (;;) {
    const value = await check()
    if (value) return value as NonNullable<T>
    if (Date.now() - started > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for: ${what}`)
    await sleep(intervalMs)
  }
}
