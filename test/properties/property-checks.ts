import type { FastifyInstance } from 'fastify'
import fc from 'fast-check'
import { problemsOf, prototypePollution } from './answer-problems.js'
import { Req, send, sentCount, type Answer } from './requests.js'

// A property run: each request sent and its answer checked (the status routes too), the statuses tallied, a
// failure reported through tap with fast-check's counterexample.

/** Statuses seen by a property, per route. */
export class Tally {
  readonly byRoute = new Map<string, Map<number, number>>()

  /** A few distinct error messages per route and status, for the test's comments. */
  readonly samples = new Map<string, Set<string>>()

  add (route: string, status: number, body = ''): void {
    const counts = this.byRoute.get(route) ?? new Map<number, number>()
    counts.set(status, (counts.get(status) ?? 0) + 1)
    this.byRoute.set(route, counts)
    if (status >= 400 && body !== '') {
      const key = `${route} ${status}`
      const seen = this.samples.get(key) ?? new Set<string>()
      if (seen.size < 4) seen.add(body.slice(0, 160))
      this.samples.set(key, seen)
    }
  }

  /** How many answers of a route had a status the test accepts. */
  count (route: string, which: (status: number) => boolean): number {
    let n = 0
    for (const [status, c] of this.byRoute.get(route) ?? []) if (which(status)) n += c
    return n
  }

  toString (): string {
    return [...this.byRoute].map(([route, counts]) =>
      `${route}: ${[...counts].sort(([a], [b]) => a - b).map(([s, c]) => `${s}×${c}`).join(' ')}`).join('\n')
  }

  /** The sampled messages (LLAMAGATE_PROPERTIES_VERBOSE=1 prints them). */
  sampleText (): string {
    return [...this.samples].map(([key, bodies]) => `${key}:\n  ${[...bodies].join('\n  ')}`).join('\n')
  }
}

export const is2xx = (s: number): boolean => s >= 200 && s < 300
export const is400 = (s: number): boolean => s === 400

/** Sends a request and throws (for fast-check to shrink) when its answer breaks a property. */
export async function check (app: FastifyInstance, req: Req, tally?: Tally, route = `${req.method} ${req.url.split('?')[0]}`): Promise<Answer> {
  const answer = await send(app, req)
  tally?.add(route, answer.status, answer.body)
  const problems = problemsOf(req, answer)
  const polluted = prototypePollution()
  if (polluted.length > 0) problems.push(`Object.prototype gained ${polluted.join(', ')}`)
  if (problems.length > 0) {
    throw new Error(`${problems.join('; ')}\n  answer ${answer.status}: ${answer.body.slice(0, 500)}`)
  }
  return answer
}

/** The read-only routes that must answer 200 whatever a body did before them. */
const STATUS_ROUTES = ['/api/ps', '/api/tags', '/v1/models']

/** What is wrong with the status routes now, or null when they all answer 200. */
export async function statusRoutesBroken (app: FastifyInstance): Promise<string | null> {
  for (const url of STATUS_ROUTES) {
    const res = await send(app, new Req('GET', url))
    if (res.status !== 200) return `GET ${url} answered ${res.status}: ${res.body.slice(0, 300)}`
  }
  return null
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

/** Stops every model until the status routes answer again. @throws when they never do */
async function mend (app: FastifyInstance): Promise<void> {
  for (let i = 0; i < 50; i++) {
    if (await statusRoutesBroken(app) === null) return
    for (const { name } of app.store.list()) await app.scheduler.stop(name).catch(() => {})
    await sleep(20)
  }
  throw new Error(`the status routes stay broken with every model stopped: ${await statusRoutesBroken(app)}`)
}

/** For each app, the count of requests sent to it when its status routes last answered after a check. */
const answeredAt = new WeakMap<FastifyInstance, number>()

/**
 * `check`, then the status routes (GET /api/ps, /api/tags, /v1/models) must still answer: a body must not leave
 * the server in a state that breaks another route. Each request is sent from a mended state (models stopped
 * until the status routes answer), and a failure is blamed on a body only if it recurs from a mended state, so
 * that fast-check shrinks to the body that does it, not to whatever ran next. The state the previous request
 * left is mended already when the status routes answered right after it and nothing was sent since (mend then
 * stops nothing): they are not asked twice in a row.
 */
export async function checkWithStatusRoutes (app: FastifyInstance, req: Req, tally?: Tally, route?: string): Promise<void> {
  // mend() changes nothing while the status routes answer: when they answered after the last request and nothing
  // was sent since, the state is already what it would leave.
  if (answeredAt.get(app) !== sentCount(app)) await mend(app)
  await check(app, req, tally, route)
  const broken = await statusRoutesBroken(app)
  if (broken === null) {
    answeredAt.set(app, sentCount(app))
    return
  }
  await mend(app)
  await send(app, req)
  const again = await statusRoutesBroken(app)
  if (again !== null) throw new Error(`after this request, ${again}`)
}

/**
 * Runs a property; a failure is reported through tap with fast-check's report (the seed, the path and the
 * shrunk counterexample) rather than thrown, so that the other properties of the file still run. Resolves
 * whether it held: the counts of a property that stopped at a failure say nothing about its generator.
 */
export async function holds<T> (t: { fail: (m: string) => void, pass: (m: string) => void }, name: string, arb: fc.Arbitrary<T>,
  predicate: (value: T) => Promise<void>, params: { seed: number, numRuns: number, timeLimitMs?: number }): Promise<boolean> {
  try {
    await fc.assert(fc.asyncProperty(arb, predicate), {
      seed: params.seed,
      numRuns: params.numRuns,
      // Shrinking stops after a while: a failure still comes back with the counterexample shrunk so far.
      plugins: [fc.interruptAfterTimeLimit(params.timeLimitMs ?? 30_000)],
    })
    t.pass(`${name}: ${params.numRuns} runs`)
    return true
  } catch (err) {
    const cause = (err as Error).cause
    t.fail(`${name}: ${(err as Error).message}${cause instanceof Error ? `\n${cause.message}` : ''}`)
    return false
  }
}
