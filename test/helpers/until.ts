import { setTimeout as sleep } from 'node:timers/promises'

/**
 * Waits until `check` holds, polling every `intervalMs`. Past `timeoutMs` it throws, naming what it waited
 * for, so that a wait that never ends fails by itself instead of running into the file's timeout. The
 * defaults leave a loaded 2-core machine plenty of room: a wait that ends is quick; one that does not, fails.
 */
export async function until (what: string, check: () => boolean | Promise<boolean>, timeoutMs = 30_000, intervalMs = 25): Promise<void> {
  const started = Date.now()
  while (!(await check())) {
    if (Date.now() - started > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for: ${what}`)
    await sleep(intervalMs)
  }
}
