import { join } from 'node:path'
import type { Answer, Req } from './requests.js'

// The properties every answer must have, whatever the request: what is wrong with one, as words.

/** The error surface a URL answers in, by the contract (core/base/error-shapes.ts), from the path alone. */
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

/** The keys that reached Object.prototype since the tests began (a `__proto__` or `constructor.prototype` body merged somewhere). */
export function prototypePollution (): string[] {
  return Object.getOwnPropertyNames(Object.prototype).filter((k) => !PROTOTYPE_KEYS.has(k))
}
const PROTOTYPE_KEYS = new Set(Object.getOwnPropertyNames(Object.prototype))
