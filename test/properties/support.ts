import { join } from 'node:path'
import type { FastifyInstance, InjectOptions } from 'fastify'
import fc from 'fast-check'
import { writeTinyGguf } from '../../scripts/fixtures/tiny-model.js'
import { build, tempDir } from '../helpers/app.js'
import { FakeHub } from '../helpers/fake-hub.js'
import { cpuRuntime } from '../helpers/runtime.js'

// Shared by the property tests of this folder: the app under test, the request a property sends, the checks
// every answer must pass, and the generators of hostile JSON.

type Test = Parameters<typeof tempDir>[0]

export interface TinyApp {
  app: FastifyInstance
  /** The tiny GGUF imported as `acme/tiny` (import it again under other names, or after a delete). */
  file: string
  /** A temporary folder of the test's own. */
  dir: string
}

/**
 * The whole app on a temporary data folder with the real CPU llama-server and the tiny model imported as
 * `acme/tiny`, so that the bodies which happen to be valid really run (on one thread, 2 tokens by default).
 */
export async function tinyApp (t: Test, values: Record<string, unknown> = {}): Promise<TinyApp> {
  const runtime = await cpuRuntime()
  // An empty hub on loopback: a pull that passes validation hears "not found" at once (a closed port would
  // have it retry for 20 s), and nothing reaches the network.
  const hub = await FakeHub.start()
  t.teardown(() => hub.close())
  const app = await build(t, {
    runtime: 'cpu',
    runtimes: { cpu: { bin: runtime.binDir } },
    hub: { endpoint: hub.url },
    ...values,
    default_options: { num_ctx: 256, num_parallel: 1, num_thread: 1, max_tokens: 2, ...(values.default_options as object) },
  })
  const dir = await tempDir(t, 'llamagate-props-')
  const file = join(dir, 'tiny.gguf')
  await writeTinyGguf({ file, seed: 1 })
  await app.store.import('acme/tiny', file)
  return { app, file, dir }
}

// ---------------------------------------------------------------------------------------------------------
// Bodies: JSON values with raw pieces (numbers JSON.stringify cannot write, nesting too deep to stringify)

/** JSON text put into a body as it is: `1e400`, `-0`, 20 000 nested arrays. */
export class Raw {
  constructor (readonly text: string, private readonly label = text) {}
  [fc.toStringMethod] (): string { return `Raw(${this.label.length > 80 ? `${this.label.slice(0, 80)}…` : this.label})` }
}

/** `open` n times, `inner`, `close` n times: nesting as deep as a test wants, without recursion. */
export function nested (depth: number, open: string, close: string, inner: string): Raw {
  return new Raw(open.repeat(depth) + inner + close.repeat(depth), `${depth} × ${open}${inner}${close}`)
}

/** JSON text of a value that may hold Raw pieces and own `__proto__` keys (as `Object.entries` lists them). */
export function toJsonText (value: unknown): string {
  if (value instanceof Raw) return value.text
  if (Array.isArray(value)) return `[${value.map(toJsonText).join(',')}]`
  if (value !== null && typeof value === 'object') {
    return `{${Object.entries(value).map(([k, v]) => `${JSON.stringify(k)}:${toJsonText(v)}`).join(',')}}`
  }
  return JSON.stringify(value) ?? 'null'
}

/** Sets an own property, even `__proto__` (an assignment would set the prototype instead). */
export function put (target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true })
}

/** An object from entries, each key an own property (`__proto__` included). */
export function objectOf (entries: Array<[string, unknown]>): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [k, v] of entries) put(out, k, v)
  return out
}

// ---------------------------------------------------------------------------------------------------------
// Requests and the checks on their answers

/** One request a property sends. */
export class Req {
  constructor (
    readonly method: 'GET' | 'HEAD' | 'POST' | 'DELETE' | 'PUT' | 'PATCH' | 'OPTIONS',
    readonly url: string,
    /** The body text as sent, or undefined for none. */
    readonly payload?: string | Buffer,
    readonly headers: Record<string, string> = {},
  ) {}

  [fc.toStringMethod] (): string {
    const body = this.payload === undefined ? '' : ` ${describePayload(this.payload)}`
    const headers = Object.keys(this.headers).length > 0 ? ` ${JSON.stringify(this.headers)}` : ''
    return `${this.method} ${this.url}${headers}${body}`
  }
}

function describePayload (payload: string | Buffer): string {
  if (Buffer.isBuffer(payload)) return `<${payload.length} bytes>`
  return payload.length > 600 ? `${JSON.stringify(payload.slice(0, 600))}… (${payload.length} characters)` : JSON.stringify(payload)
}

/** A JSON body for a route: the value written with `toJsonText`, sent as application/json unless told. */
export function jsonReq (method: Req['method'], url: string, body: unknown, contentType = 'application/json'): Req {
  return new Req(method, url, toJsonText(body), contentType === '' ? {} : { 'content-type': contentType })
}

export interface Answer { status: number, headers: Record<string, unknown>, body: string }

export async function send (app: FastifyInstance, req: Req): Promise<Answer> {
  const options: InjectOptions = { method: req.method, url: req.url, headers: req.headers }
  if (req.payload !== undefined) options.payload = req.payload
  const res = await app.inject(options)
  return { status: res.statusCode, headers: res.headers, body: res.body }
}

/** The error surface a URL answers in, by the contract (core/error-shapes.ts), from the path alone. */
export function surfaceOf (url: string): 'native' | 'openai' | 'anthropic' {
  const path = url.split('?')[0]!
  if (path === '/v1/messages' || path.startsWith('/v1/messages/')) return 'anthropic'
  if (path === '/v1' || path.startsWith('/v1/')) return 'openai'
  return 'native'
}

// Frames of a stack trace, or the paths of the gateway's own files and of Node's internals.
const STACK = [
  /\n\s*at \S/, /\bat (?:async )?[\w.$<>[\] ]*\(?(?:file:\/\/|node:|\/)[^\s)]*:\d+:\d+/, /node:internal/, /\bfile:\/\/\//,
  /\b(?:core|plugins|runtimes|scripts)\/[\w/.-]+\.(?:ts|js):\d+/, /\/node_modules\//,
]
// What a JavaScript engine says about a bug in the code, never about a client's request.
const ENGINE_ERRORS = [
  /Maximum call stack size exceeded/, /Cannot read propert(?:y|ies) of/, /Cannot set propert(?:y|ies) of/,
  /is not a function\b/, /is not iterable\b/, /Cannot convert undefined or null to object/, /Invalid time value/,
  /Invalid array length/, /Cannot destructure/, /\bundefined is not\b/, /Converting circular structure/,
]

/** Where the repository lives here: an answer naming it leaks the server's own files (unless the request did). */
const REPO_DIR = join(new URL('.', import.meta.url).pathname, '..', '..')

/**
 * What is wrong with an answer, by the properties every answer must have: never a 500 (nor any 5xx other than the
 * runtime's 502 and 503), no stack trace, no engine error text, no path of the server's own files, and every
 * error in the shape of its surface (as JSON). Empty when all is well.
 */
export function problemsOf (req: Req, answer: Answer): string[] {
  const problems: string[] = []
  const { status, body } = answer
  if (status >= 500 && status !== 502 && status !== 503) problems.push(`status ${status}`)
  if (status < 100 || status > 599) problems.push(`status ${status} is no HTTP status`)
  for (const re of STACK) if (re.test(body)) problems.push(`stack trace or internal path in the answer (${re})`)
  for (const re of ENGINE_ERRORS) if (re.test(body)) problems.push(`engine error text in the answer (${re})`)
  const sent = req.payload === undefined ? '' : req.payload.toString()
  if (body.includes(REPO_DIR) && !sent.includes(REPO_DIR)) problems.push(`the answer names the server's folder ${REPO_DIR}`)
  if (/runtime_died|was killed by SIG|exited with code/.test(body)) problems.push('the runtime died under this request')
  if (status >= 400 && req.method !== 'HEAD') problems.push(...shapeProblems(req.url, answer))
  return problems
}

function shapeProblems (url: string, answer: Answer): string[] {
  const type = String(answer.headers['content-type'] ?? '')
  if (!type.startsWith('application/json')) return [`error answered as ${JSON.stringify(type)}, not JSON`]
  let parsed: unknown
  try {
    parsed = JSON.parse(answer.body)
  } catch {
    return ['error body is not JSON']
  }
  const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v)
  const keys = (v: Record<string, unknown>): string => Object.keys(v).sort().join(',')
  const surface = surfaceOf(url)
  if (!isObject(parsed)) return [`error body ${answer.body.slice(0, 80)} is not an object`]
  if (surface === 'native') {
    if (keys(parsed) !== 'error' || typeof parsed.error !== 'string') return [`not the native shape {error: string}: ${answer.body.slice(0, 200)}`]
    if (parsed.error === '') return ['empty native error message']
    return []
  }
  if (surface === 'openai') {
    const e = parsed.error
    if (keys(parsed) !== 'error' || !isObject(e) || keys(e) !== 'code,message,param,type' ||
      typeof e.message !== 'string' || typeof e.type !== 'string' ||
      !(e.param === null || typeof e.param === 'string') || !(e.code === null || typeof e.code === 'string')) {
      return [`not OpenAI's shape {error: {message, type, param, code}}: ${answer.body.slice(0, 200)}`]
    }
    if (e.message === '') return ['empty OpenAI error message']
    const expected = answer.status >= 500 ? 'server_error' : 'invalid_request_error'
    if (e.type !== expected) return [`OpenAI error type ${String(e.type)} for status ${answer.status}`]
    return []
  }
  const e = parsed.error
  // The SDK's ErrorResponse: request_id a string or null (shared.ts).
  if (keys(parsed) !== 'error,request_id,type' || parsed.type !== 'error' || !(parsed.request_id === null || typeof parsed.request_id === 'string') ||
    !isObject(e) || keys(e) !== 'message,type' || typeof e.type !== 'string' || typeof e.message !== 'string') {
    return [`not Anthropic's shape {type: "error", error: {type, message}, request_id}: ${answer.body.slice(0, 200)}`]
  }
  if (e.message === '') return ['empty Anthropic error message']
  return []
}

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

/**
 * `check`, then the status routes (GET /api/ps, /api/tags, /v1/models) must still answer: a body must not leave
 * the server in a state that breaks another route. The state is mended (models stopped) before each request,
 * and a breakage is blamed on a body only if it breaks them again from a mended state, so that fast-check
 * shrinks to the body that does it, not to whatever ran next.
 */
export async function checkWithStatusRoutes (app: FastifyInstance, req: Req, tally?: Tally, route?: string): Promise<void> {
  await mend(app)
  await check(app, req, tally, route)
  const broken = await statusRoutesBroken(app)
  if (broken === null) return
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

/** The keys that reached Object.prototype since the tests began (a `__proto__` or `constructor.prototype` body merged somewhere). */
export function prototypePollution (): string[] {
  return Object.getOwnPropertyNames(Object.prototype).filter((k) => !PROTOTYPE_KEYS.has(k))
}
const PROTOTYPE_KEYS = new Set(Object.getOwnPropertyNames(Object.prototype))

// ---------------------------------------------------------------------------------------------------------
// Generators

const weighted = <T>(weight: number, arbitrary: fc.Arbitrary<T>): fc.WeightedArbitrary<T> => ({ weight, arbitrary })

/** Strings that have broken servers: number look-alikes, paths, names, control and lone surrogate characters. */
export const hostileString: fc.Arbitrary<string> = fc.oneof(
  weighted(6, fc.constantFrom(
    '', ' ', '\t\n', 'NaN', 'Infinity', '-Infinity', '-1', '0', '1e400', '0x1f', '1_000', 'null', 'undefined', 'true',
    '[]', '{}', '__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty',
    '../../../../etc/passwd', '..', '.', '/', '//', 'a/b/c', 'acme/tiny', 'ACME/TINY', 'acme/tiny:f16', 'acme/tiny:../x',
    'acme/missing', 'acme/', '/tiny', 'acme/.tiny', 'acme/-', 'acme/tiny/', 'a'.repeat(97) + '/b',
    '\u0000', '\u0000acme/tiny', '\ud800', '\udfff', '\ud83d', '\u202eevil', '\ufeff', '\u2028\u2029',
    '💥'.repeat(40), 'Ω≈ç√∫˜µ≤', '{{ .Prompt }}', '{% for x in y %}', '<|im_start|>system', '</s>', '[INST]',
    '%00', '%2e%2e%2f', '\\..\\..\\', 'C:\\Windows\\win.ini', '\r\nX-Injected: 1', '<script>alert(1)</script>',
    'data:image/png;base64,AAAA', 'data:;base64,', 'http://127.0.0.1:9/x.png', 'file:///etc/passwd',
    'sha256:' + '0'.repeat(64), 'sha256-' + 'f'.repeat(64), 'sha256:' + 'G'.repeat(64),
    '5m', '-1m', '0s', '1h30m', '99999999999999999999h', '1e3', '-0', '  5m  ', '5M', '1d',
    'json', 'JSON', 'low', 'high', 'text', 'json_schema', 'q4_0', 'Q4_K_M', 'iq2_xxs', 'f16',
    'user', 'assistant', 'system', 'tool', 'developer', 'function',
  )),
  weighted(3, fc.string({ unit: 'binary', maxLength: 24 })),
  weighted(2, fc.string({ unit: 'grapheme', maxLength: 24 })),
  // Lone surrogates and NULs among ordinary characters: text no encoder can write as UTF-8.
  weighted(1, fc.string({ unit: fc.oneof(fc.constantFrom('\ud800', '\udc00', '\u0000', '\uffff'), fc.string({ unit: 'binary', minLength: 1, maxLength: 1 })), maxLength: 12 })),
  weighted(1, fc.integer({ min: 1, max: 70_000 }).map((n) => 'x'.repeat(n))),
  weighted(1, fc.integer({ min: 1, max: 3_000 }).map((n) => '💥\ud800'.repeat(n))),
)

/** Numbers at the edges: of int32, of exact doubles, of the double range, and what JSON.parse makes of 1e400. */
export const hostileNumber: fc.Arbitrary<unknown> = fc.oneof(
  weighted(6, fc.constantFrom<unknown>(
    0, 1, -1, -2, 2, 0.5, -0.5, 1e-320, 2 ** 31 - 1, 2 ** 31, 2 ** 32, -(2 ** 31) - 1, 2 ** 53, 2 ** 53 + 2,
    Number.MAX_SAFE_INTEGER, 1e20, -1e20, 1e308, -1e308, 5e-324, 16, 15, 64, 65, 1024, 1025,
    new Raw('1e400'), new Raw('-1e400'), new Raw('-0'), new Raw('1E+2'), new Raw('0.000000000000000000000000001'),
    new Raw('1' + '0'.repeat(400)), new Raw('123456789012345678901234567890'),
  )),
  weighted(2, fc.integer()),
  weighted(2, fc.double({ noNaN: true, noDefaultInfinity: true })),
)

/** Depths that are shallow, and depths that overflow a recursive walk or JSON.stringify (the stack). */
const depth = fc.oneof(weighted(2, fc.integer({ min: 1, max: 40 })), weighted(3, fc.integer({ min: 1_000, max: 12_000 })))

/**
 * Deep nesting in the forms the routes walk: arrays, objects, message-like `content` chains and Anthropic-like
 * blocks, written as raw text (the test itself could not JSON.stringify them).
 */
export const deepValue: fc.Arbitrary<Raw> = fc.tuple(depth, fc.constantFrom('array', 'object', 'content', 'parts', 'mixed')).map(([n, kind]) => {
  switch (kind) {
    case 'array': return nested(n, '[', ']', '1')
    case 'object': return nested(n, '{"a":', '}', '1')
    case 'content': return nested(n, '[{"content":', '}]', '"x"')
    case 'parts': return nested(n, '[{"type":"text","text":"x","content":', '}]', '[]')
    default: return nested(n, '{"content":[', ']}', '{}')
  }
})

/** Objects with keys that reach for the prototype or shadow its methods. */
export const hostileObject: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom<unknown>(
    {}, [], [null], [[]], [{}],
    objectOf([['__proto__', { polluted: 'yes' }]]),
    objectOf([['constructor', { prototype: { polluted: 'yes' } }]]),
    objectOf([['prototype', { polluted: 'yes' }]]),
    objectOf([['toString', 1], ['valueOf', 'x'], ['hasOwnProperty', null]]),
    objectOf([['type', 'image_url'], ['image_url', { url: 'http://127.0.0.1:9/a.png' }]]),
    objectOf([['type', 'image'], ['source', { type: 'base64', media_type: 'image/png', data: '!!' }]]),
    objectOf([['type', 'input_image'], ['image_url', null]]),
    objectOf([['content', [{ type: 'image_url', image_url: 'data:image/png;base64,AAAA' }]]]),
  ),
  fc.dictionary(hostileString, fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 }),
)

/** Any value a hostile client might put where a field goes. */
export const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  weighted(3, hostileString),
  weighted(3, hostileNumber),
  weighted(2, hostileObject),
  weighted(1, fc.constantFrom<unknown>(null, true, false)),
  weighted(1, deepValue),
  weighted(2, fc.jsonValue({ maxDepth: 3 })),
)

/** Keys for fields a route does not know: random ones, and the ones that reach for the prototype. */
export const hostileKey: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', 'valueOf', '', ' ', 'model ', 'MODEL', '\u0000', '\ud800',
    'n_predict', 'n_probs', 'grammar', 'json_schema', 'cache_prompt', 'id_slot', 'lora', 'logit_bias', 'n_keep', 'samplers'),
  fc.string({ maxLength: 12 }),
)

/**
 * "Almost valid" objects of a schema: a valid object (each optional field there or not, the required ones
 * there), then, for `mutationRate` of them, a few mutations, each one field set to a hostile value, deleted, or
 * a new hostile key added. Objects nest (messages in a body, parts in a message), each with its own mutations:
 * a low rate keeps enough whole bodies valid to reach the route's code, not only its validation.
 */
export function almost (spec: Record<string, fc.Arbitrary<unknown>>, required: string[] = [], mutationRate = 0.2): fc.Arbitrary<Record<string, unknown>> {
  const keys = Object.keys(spec)
  const valid = fc.record(spec, { requiredKeys: required as never[] }) as fc.Arbitrary<Record<string, unknown>>
  const mutation = fc.oneof(
    weighted(6, fc.tuple(fc.constant('set' as const), fc.constantFrom(...keys), hostileValue)),
    weighted(1, fc.tuple(fc.constant('delete' as const), fc.constantFrom(...keys), fc.constant(null))),
    weighted(2, fc.tuple(fc.constant('set' as const), hostileKey, hostileValue)),
  )
  const mutated = Math.round(mutationRate * 100)
  const mutations = fc.oneof(weighted(100 - mutated, fc.constant([])), weighted(mutated, fc.array(mutation, { minLength: 1, maxLength: 3 })))
  return fc.tuple(valid, mutations).map(([object, changes]) => {
    const out = objectOf(Object.entries(object))
    for (const [what, key, value] of changes) {
      if (what === 'delete') delete out[key]
      else put(out, key, value)
    }
    return out
  })
}

/** Whether a generator makes valid objects only, or almost valid ones. */
export type Mode = 'valid' | 'almost'

/** An object of a schema: valid (`fc.record`), or almost valid (`almost`). */
export function obj (mode: Mode, spec: Record<string, fc.Arbitrary<unknown>>, required: string[] = [], mutationRate?: number): fc.Arbitrary<Record<string, unknown>> {
  if (mode === 'valid') return fc.record(spec, { requiredKeys: required as never[] }) as fc.Arbitrary<Record<string, unknown>>
  return almost(spec, required, mutationRate)
}

/** A copy of a body, Raw pieces and own `__proto__` keys kept. */
function copyOf (value: unknown): unknown {
  if (value instanceof Raw || value === null || typeof value !== 'object') return value
  if (Array.isArray(value)) return value.map(copyOf)
  return objectOf(Object.entries(value).map(([k, v]) => [k, copyOf(v)]))
}

/**
 * A valid body with `value` put at any depth: in place of one of its fields or items (at the top, in a message,
 * in a part, in the options), or under a new key. `pick` chooses the object or array, and the field or item.
 */
export function anywhere (valid: fc.Arbitrary<unknown>, value: fc.Arbitrary<unknown>): fc.Arbitrary<unknown> {
  return fc.tuple(valid, fc.nat(), value, fc.option(hostileKey, { freq: 4 })).map(([body, pick, v, newKey]) => {
    const copy = copyOf(body)
    const containers: Array<Record<string, unknown> | unknown[]> = []
    const collect = (node: unknown): void => {
      if (node instanceof Raw || node === null || typeof node !== 'object') return
      containers.push(node as Record<string, unknown> | unknown[])
      for (const child of Object.values(node)) collect(child)
    }
    collect(copy)
    const node = containers[pick % Math.max(containers.length, 1)]
    if (node === undefined) return v
    if (Array.isArray(node)) {
      if (node.length === 0 || newKey !== null) node.push(v)
      else node[pick % node.length] = v
    } else {
      const keys = Object.keys(node)
      put(node, newKey ?? keys[pick % Math.max(keys.length, 1)] ?? 'x', v)
    }
    return copy
  })
}

// Valid values of the fields the routes share.

/** Mostly the tiny model, in the spellings the store takes; now and then one that is not there. */
export const modelName = fc.constantFrom('acme/tiny', 'acme/tiny', 'acme/tiny', 'acme/tiny', 'ACME/Tiny', 'acme/tiny:f16', 'acme/missing')
export const shortText = fc.string({ maxLength: 12 })
export const keepAlive = fc.constantFrom<unknown>('5m', 300, '1h', '10s', -1, '-1m', '1h30m')
/** Generation length: always small, so that a valid body answers in milliseconds. */
export const fewTokens = fc.integer({ min: 1, max: 3 })

/** The options object (core/options-schema.ts): sampling options in range; load-time ones at the defaults. */
export const optionsSpec: Record<string, fc.Arbitrary<unknown>> = {
  temperature: fc.double({ min: 0, max: 2, noNaN: true }),
  top_p: fc.double({ min: 0.01, max: 1, noNaN: true }),
  top_k: fc.integer({ min: 0, max: 100 }),
  max_tokens: fewTokens,
  num_predict: fewTokens,
  seed: fc.integer(),
  min_p: fc.double({ min: 0, max: 1, noNaN: true }),
  typical_p: fc.double({ min: 0, max: 1, noNaN: true }),
  repeat_penalty: fc.double({ min: 0, max: 2, noNaN: true }),
  repeat_last_n: fc.integer({ min: -1, max: 64 }),
  presence_penalty: fc.double({ min: -2, max: 2, noNaN: true }),
  frequency_penalty: fc.double({ min: -2, max: 2, noNaN: true }),
  stop: fc.oneof(shortText, fc.array(shortText, { maxLength: 3 })),
  num_keep: fc.integer({ min: -1, max: 8 }),
  ignore_eos: fc.boolean(),
  // The defaults of tinyApp: the same instance serves; a mutation may still try others.
  num_ctx: fc.constant(256),
  num_parallel: fc.constant(1),
  cache_type_k: fc.constant('f16'),
}
export const options = (mode: Mode): fc.Arbitrary<Record<string, unknown>> => obj(mode, optionsSpec)
