import type { FastifyInstance, InjectOptions } from 'fastify'
import fc from 'fast-check'
import { toJsonText } from './raw-json.js'

// The request a property sends, and the answer it gets (through app.inject).

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

/** How many requests each app was sent through `send`: whether anything reached it between two moments. */
const sentTo = new WeakMap<FastifyInstance, number>()
export const sentCount = (app: FastifyInstance): number => sentTo.get(app) ?? 0

export async function send (app: FastifyInstance, req: Req): Promise<Answer> {
  sentTo.set(app, sentCount(app) + 1)
  const options: InjectOptions = { method: req.method, url: req.url, headers: req.headers }
  if (req.payload !== undefined) options.payload = req.payload
  const res = await app.inject(options)
  return { status: res.statusCode, headers: res.headers, body: res.body }
}
