import { getPriority, setPriority } from 'node:os'
import type { Test } from 'tap'

/** Linux's lowest CPU priority (nice 19). */
const LOWEST = 19

/**
 * Puts the llama-server serving `model` (its main thread, which computes with one thread) at the lowest CPU priority
 * while a test holds its slot with an answer that runs until released: the suite's CPU-bound, so a holder at normal
 * priority takes a whole core from the other test files for as long as it holds, and at the lowest it takes only what
 * nothing else wants. The slot stays held either way. Returns the way back, for the requests that follow the hold
 * (also run at the test's end); where lowering the niceness again is not allowed (not root), it stays low.
 * `headers`: a key's, where /api/ps wants one.
 */
export async function lowPriorityWhileHeld (t: Test, url: string, model: string, headers: Record<string, string> = {}): Promise<() => void> {
  const res = await fetch(`${url}/api/ps`, { headers })
  if (!res.ok) throw new Error(`/api/ps answered ${res.status}: ${await res.text()}`)
  const { models } = await res.json() as { models: Array<{ name: string, pid?: number }> }
  const pid = models.find((m) => m.name === model)?.pid
  if (pid === undefined) throw new Error(`${model} has no llama-server on /api/ps: ${JSON.stringify(models)}`)
  const before = getPriority(pid)
  setPriority(pid, LOWEST)
  let restored = false
  const restore = (): void => {
    if (restored) return
    restored = true
    try {
      setPriority(pid, before)
    } catch {
      // Gone already, or not ours to raise again.
    }
  }
  t.teardown(restore)
  return restore
}
