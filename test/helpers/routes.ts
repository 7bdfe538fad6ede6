import type { FastifyInstance, HTTPMethods } from 'fastify'

export interface Route { method: string, url: string }

/** A value for each route parameter, so that a request reaches the route rather than a 400 or a 404. */
const SAMPLES: Record<string, string> = { ':digest': `sha256:${'0'.repeat(64)}`, ':id': 'resp_0', ':file': 'index.html', '*': 'acme/broken' }

/** A route's URL with each parameter filled in (`wildcard` for `*`, a model's name on /v1/models/*). */
export function sampleUrl (url: string, wildcard = SAMPLES['*']!): string {
  return url.replace(/:[a-z]+|\*/gi, (p) => p === '*' ? wildcard : SAMPLES[p] ?? 'x')
}

/**
 * Every route the app has, from `printRoutes`' tree (each line a path segment under its parent, with its methods),
 * each checked with `hasRoute`: a line this cannot read fails the test rather than leaving a route out.
 */
export function routesOf (app: FastifyInstance): Route[] {
  const routes: Route[] = []
  const parents: string[] = []
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    if (line.trim() === '') continue
    const match = /^((?:│ {3}| {4})*)[├└]── (.+) \(([A-Z, ]+)\)$/.exec(line)
    if (match === null) throw new Error(`cannot read this line of printRoutes: ${JSON.stringify(line)}`)
    const depth = match[1]!.length / 4
    const parent = depth === 0 ? '' : parents[depth - 1]!
    const methods = match[3]!.split(', ')
    // find-my-way's tree drops the "/" before a wildcard child ("/v1/models" + "*" is "/v1/models/*").
    const url = [parent + match[2]!, `${parent}/${match[2]!}`].find((u) => methods.every((m) => app.hasRoute({ method: m as HTTPMethods, url: u })))
    if (url === undefined) throw new Error(`no route ${methods.join(', ')} ${parent + match[2]!}`)
    parents[depth] = url
    parents.length = depth + 1
    for (const method of methods) routes.push({ method, url })
  }
  return routes
}
