import type { Test } from 'tap'

/** How long `request` takes on this machine now, alone: the median of a few runs, one after the other. */
export async function usualMs (request: () => Promise<unknown>, runs = 3): Promise<number> {
  const times: number[] = []
  for (let i = 0; i < runs; i++) {
    const started = performance.now()
    await request()
    times.push(performance.now() - started)
  }
  return Math.round(times.sort((a, b) => a - b)[Math.floor(runs / 2)]!)
}

/**
 * Asserts that a request timed while an attack ran took about its usual time: within ten times it and eight
 * seconds, room for a slower or busier machine's noise (a CI run saw a 1 s log line take 1.7 s) but not for waiting
 * behind the attack (what each one cost before its limit: 24 s to minutes, three times the margin).
 * `namedBoundMs`: a limit the request may wait out by design (a stall timeout).
 */
export function withinUsualTime (t: Test, what: string, ms: number, usual: number, namedBoundMs = 0): void {
  const bound = namedBoundMs + 10 * usual + 8000
  const named = namedBoundMs > 0 ? `, ${namedBoundMs} ms of it the limit that ends the attack` : ''
  t.ok(ms <= bound, `${what}: ${Math.round(ms)} ms while attacked, ${usual} ms usually (at most ${bound}${named})`)
}
