import type { Readable } from 'node:stream'
import { Pool } from 'undici'
import { GatewayError } from '../../core/errors.js'
import { pastLimit, readAtMost, UNLIMITED, type AnswerLimits } from './answer-limits.js'
import { replaceBytes, type DataRewrite } from './data-rewrite.js'
import type { SplitLimits } from './delimited-text.js'
import { Redaction } from './redaction.js'
import { sseData } from './sse-events.js'
import { RelaySockets } from './relay-sockets.js'
import { relayStream, type RelayProgress, type RelaySink } from './stream-relay.js'
import { addressTarget, type RuntimeAddress } from './runtime-address.js'
import { runtimeErrorFrom, withoutSecrets } from './runtime-error.js'

/** The part of one entry of llama-server's `GET /slots` read here. */
interface SlotState {
  id?: number
  n_ctx?: number
  is_processing?: boolean
  id_task?: number
  /** What the slot's cache holds: the prompt and what was generated after it. */
  n_prompt_tokens?: number
  n_prompt_tokens_processed?: number
  next_token?: Array<{ n_decoded?: number }>
  /** The `cache_salt` its cache was computed with (a build with llamagate's patch set; absent otherwise). */
  cache_salt?: string
}

/** A slot as `slotCaches` tells it; `salt`: the `cache_salt` its cache was computed with ('' for none). */
export interface SlotCache { id: number, nCtx: number, tokens: number, busy: boolean, salt: string }
/** What a slot save or restore moved. */
export interface SlotTransfer { tokens: number, bytes: number, ms: number }

export interface RuntimeEndpointOptions {
  /** The model it serves, for messages ("the runtime of model X ..."). */
  name: string
  address: RuntimeAddress
  /** Its slots: the pool keeps a connection for each and two to spare. */
  slots: number
  /** Sent with every request (an upstream's Authorization). Credentials: their values never appear in an error. @default none */
  headers?: Record<string, string>
  /**
   * Every JSON body posted gets its `model` field set to this: the name the runtime itself knows the model by
   * (an upstream's), where the surfaces use the gateway's. @default unset: bodies go as given
   */
  model?: string
  /** Keep the connections of streamed answers for the next stream (an upstream; llama-server closes them). @default false */
  keepStreams?: boolean
  /**
   * The name the client asked for, where `model` differs from it (an upstream's model under a prefix): answers name
   * `model`, and are given this name back. @default unset: answers go as the runtime gave them
   */
  servedAs?: string
  /**
   * The most bytes read of one answer, of an error answer, and of one line or event held whole (an upstream's,
   * config.yaml's limits): past one the request fails saying which, and its connection is dropped. @default none
   */
  limits?: AnswerLimits
}

/**
 * The one object that speaks to one running llama-server: whole JSON answers over a pool of kept-alive
 * connections, parsed event streams for surfaces that reshape them, and the raw relay for those that pass
 * them through. Nothing outside runtimes/ knows the address or holds a connection; surfaces get an endpoint
 * through their lease.
 */
export class RuntimeEndpoint {
  readonly name: string
  readonly address: RuntimeAddress
  private readonly slots: number
  private readonly headers: Record<string, string> | undefined
  private readonly model: string | undefined
  /** The address's own path, put before every request's. */
  private readonly prefix: string
  private connections: Pool | null = null
  /** Connections kept between streamed answers, when the runtime keeps them alive. */
  private readonly streams: RelaySockets | null
  /** Puts the client's name for the model back into what the runtime answered, or null when the names are the same. */
  private readonly renamed: DataRewrite | null
  /** Cuts the headers' secrets (an upstream's key) out of everything read from the runtime; null without headers. */
  protected readonly redaction: Redaction | null
  private readonly limits: AnswerLimits
  /** What a stream's lines and events may hold (`limits`). */
  protected readonly splitLimits: SplitLimits
  private closed = false

  constructor (options: RuntimeEndpointOptions) {
    this.name = options.name
    this.address = options.address
    this.slots = options.slots
    this.headers = options.headers
    this.model = options.model
    this.prefix = addressTarget(options.address).prefix
    this.streams = options.keepStreams === true ? new RelaySockets() : null
    this.renamed = options.model !== undefined && options.servedAs !== undefined && options.servedAs !== options.model ? modelRenaming(options.model, options.servedAs) : null
    this.redaction = options.headers === undefined ? null : Redaction.of(Object.values(options.headers))
    this.limits = options.limits ?? UNLIMITED
    this.splitLimits = { ...this.limits, tooLarge: (limit) => pastLimit(this.name, limit, this.limits) }
  }

  /** The runtime's whole answer to a POST, as text. @throws the runtime's own error, as a gateway error */
  async post (path: string, body: unknown, signal: AbortSignal): Promise<string> {
    const text = await this.readAnswer(await this.request(path, body, signal), 'answerBytes')
    return this.renamed === null ? text : (this.renamed.push(Buffer.from(text))?.toString('utf8') ?? text)
  }

  /** The runtime's whole answer to a POST, parsed. */
  async postJson<T = unknown> (path: string, body: unknown, signal: AbortSignal): Promise<T> {
    return JSON.parse(await this.post(path, body, signal)) as T
  }

  /**
   * The events of a streamed answer (the body must ask for `stream: true`), each parsed, up to llama-server's
   * `[DONE]` or the end of the body. Resolves once the runtime's status is known to be good, so that a
   * refusal is still thrown before the caller opens its own stream.
   */
  async events (path: string, body: unknown, signal: AbortSignal): Promise<AsyncGenerator<unknown>> {
    return this.parsedEvents(await this.request(path, body, signal))
  }

  /**
   * Streams the answer to a POST straight into `sink`, chunk by chunk as llama-server framed it (see
   * stream-relay.ts). `payload` is the JSON body, already serialized.
   */
  relay (path: string, payload: string, sink: RelaySink, progress: RelayProgress, signal: AbortSignal): Promise<void> {
    // The hot path: a local runtime's stream, sent as given.
    if (this.model === undefined && this.headers === undefined && this.streams === null) return relayStream({ name: this.name, address: this.address, path, payload, sink, progress, signal })
    return this.relayAdapted(path, payload, sink, progress, signal)
  }

  /**
   * This endpoint with `fields` added to every JSON body sent through it (a request's `cache_salt`): what a lease
   * hands its surface, so that no request body can go out without them. They win over the body's own.
   */
  withFields (fields: Readonly<Record<string, unknown>>): RuntimeEndpoint {
    const view = Object.create(this) as RuntimeEndpoint
    const added = (body: unknown): unknown => typeof body === 'object' && body !== null && !Array.isArray(body) ? { ...body, ...fields } : body
    // A serialized object gets them as its last members: a JSON parser takes the last of a repeated name.
    const members = JSON.stringify(fields).slice(1, -1)
    const appended = (payload: string): string => {
      const end = payload.lastIndexOf('}')
      if (members === '' || !payload.startsWith('{') || end === -1) return payload
      return `${payload.slice(0, end)}${/^\{\s*$/.test(payload.slice(0, end)) ? '' : ','}${members}${payload.slice(end)}`
    }
    view.post = (path, body, signal) => this.post(path, added(body), signal)
    view.events = (path, body, signal) => this.events(path, added(body), signal)
    view.relay = (path, payload, sink, progress, signal) => this.relay(path, appended(payload), sink, progress, signal)
    return view
  }

  /**
   * The runtime's own statistics in Prometheus' text format (`GET /metrics`; llama-server serves it when started
   * with `--metrics`). @throws when it does not answer 200 before `signal` aborts
   */
  async metricsText (signal: AbortSignal): Promise<string> {
    return this.get('/metrics', signal)
  }

  /** How full its context is: the tokens held by slots processing a request, and all the slots' context, from `GET /slots`. */
  async contextUse (signal: AbortSignal): Promise<{ busyTokens: number, totalTokens: number }> {
    const slots = JSON.parse(await this.get('/slots', signal)) as SlotState[]
    let busyTokens = 0
    let totalTokens = 0
    for (const slot of slots) {
      totalTokens += slot.n_ctx ?? 0
      // n_prompt_tokens: what the slot's cache holds, the prompt and what was generated after it.
      if (slot.is_processing) busyTokens += slot.n_prompt_tokens ?? 0
    }
    return { busyTokens, totalTokens }
  }

  /**
   * What the busy slots have done so far, one mark per slot processing a task (its task, the prompt tokens read
   * and the tokens generated): the same marks twice in a row mean no progress. `GET /slots` is answered by
   * llama-server's main loop, so a runtime that is stuck there does not answer at all. @throws as `get`
   */
  async slotProgress (signal: AbortSignal): Promise<string[]> {
    const slots = JSON.parse(await this.get('/slots', signal)) as SlotState[]
    return slots.filter((slot) => slot.is_processing).map((slot) =>
      `${slot.id}:${slot.id_task ?? ''}:${slot.n_prompt_tokens_processed ?? ''}:${slot.next_token?.[0]?.n_decoded ?? ''}`)
  }

  /** Each slot's id, context, and how many tokens its cache holds (0 for one never used, or cleared). */
  async slotCaches (signal: AbortSignal): Promise<SlotCache[]> {
    const slots = JSON.parse(await this.get('/slots', signal)) as SlotState[]
    return slots.map((slot) => ({ id: slot.id ?? 0, nCtx: slot.n_ctx ?? 0, tokens: slot.n_prompt_tokens ?? 0, busy: slot.is_processing === true, salt: typeof slot.cache_salt === 'string' ? slot.cache_salt : '' }))
  }

  /**
   * Writes a slot's cache (its tokens and their KV state) to `filename` in the folder the runtime was started with
   * (`--slot-save-path`); llama-server waits for the slot to be idle first. @throws as `post`
   */
  async saveSlot (id: number, filename: string, signal: AbortSignal): Promise<SlotTransfer> {
    const answer = await this.postJson<{ n_saved?: number, n_written?: number, timings?: { save_ms?: number } }>(`/slots/${id}?action=save`, { filename }, signal)
    return { tokens: answer.n_saved ?? 0, bytes: answer.n_written ?? 0, ms: answer.timings?.save_ms ?? 0 }
  }

  /**
   * Loads a saved cache into a slot (an idle one: llama-server waits otherwise), as computed with `salt` (the state
   * file does not hold it). @throws as `post`: another build's or a damaged file is refused
   */
  async restoreSlot (id: number, filename: string, signal: AbortSignal, salt = ''): Promise<SlotTransfer> {
    const answer = await this.postJson<{ n_restored?: number, n_read?: number, timings?: { restore_ms?: number } }>(`/slots/${id}?action=restore`, { filename, ...(salt !== '' ? { cache_salt: salt } : {}) }, signal)
    return { tokens: answer.n_restored ?? 0, bytes: answer.n_read ?? 0, ms: answer.timings?.restore_ms ?? 0 }
  }

  /** Closes the pooled connections, if any were made; a request asked for later gets the pool's "destroyed" error. */
  async close (): Promise<void> {
    this.closed = true
    this.streams?.close()
    await this.connections?.destroy().catch(() => {})
  }

  /**
   * Sends a request and returns its body once the status is known to be good.
   *
   * A pooled connection can be closed by the runtime just as a request goes out on it; then nothing was
   * generated, so the request is sent once more on a fresh connection. Runtime errors (4xx/5xx) become
   * gateway errors carrying the runtime's own message.
   */
  protected async request (path: string, body: unknown, signal: AbortSignal): Promise<Readable> {
    const payload = JSON.stringify(this.withModel(body))
    for (let attempt = 1; ; attempt++) {
      try {
        const response = await this.pool.request({
          method: 'POST', path: this.prefix + path, body: payload, signal,
          headers: { ...this.headers, 'content-type': 'application/json' },
        })
        if (response.statusCode >= 400) throw await this.refusal(response)
        // A whole answer is read within limits.answerBytes (readAnswer); a stream, line by line (parsedEvents).
        if (Number(response.headers['content-length']) > this.limits.answerBytes) {
          response.body.destroy()
          throw pastLimit(this.name, 'answerBytes', this.limits)
        }
        return response.body
      } catch (err) {
        if (signal.aborted) throw signal.reason
        if (attempt === 1 && isStaleConnection(err)) continue
        throw this.redacted(err)
      }
    }
  }

  /** A GET's whole answer, retried once on a fresh connection like a POST (see `request`). */
  private async get (path: string, signal: AbortSignal): Promise<string> {
    for (let attempt = 1; ; attempt++) {
      try {
        const response = await this.pool.request({ method: 'GET', path: this.prefix + path, signal, ...(this.headers ? { headers: this.headers } : {}) })
        if (response.statusCode !== 200) throw await this.refusal(response)
        return await this.readAnswer(response.body, 'answerBytes', response.headers['content-length'])
      } catch (err) {
        if (signal.aborted) throw signal.reason
        if (attempt === 1 && isStaleConnection(err)) continue
        throw this.redacted(err)
      }
    }
  }

  /** `relay` to a runtime that takes headers or its own model name: the body rewritten, its key cut out, errors redacted. */
  private async relayAdapted (path: string, payload: string, sink: RelaySink, progress: RelayProgress, signal: AbortSignal): Promise<void> {
    const body = this.model === undefined ? payload : JSON.stringify(this.withModel(JSON.parse(payload)))
    const rewrite = chained(this.redaction?.stream() ?? null, this.renamed)
    try {
      await relayStream({
        name: this.name, address: this.address, path, payload: body, sink, progress, signal,
        ...(this.headers ? { headers: this.headers } : {}), ...(this.streams !== null && !this.closed ? { sockets: this.streams } : {}),
        ...(rewrite !== null ? { rewrite } : {}), ...(this.limits !== UNLIMITED ? { limits: this.limits } : {}),
      })
    } catch (err) {
      throw this.redacted(err)
    }
  }

  /** A whole body's text within its limit, the secrets cut out. @throws past the limit (the connection dropped) */
  private async readAnswer (body: Readable, limit: 'answerBytes' | 'errorBytes', declared?: unknown): Promise<string> {
    const text = (await readAtMost(body, this.limits[limit], () => pastLimit(this.name, limit, this.limits), declared)).toString('utf8')
    return this.redaction === null ? text : this.redaction.text(text)
  }

  /** The gateway error for an error answer, its body read within limits.errorBytes (past them, that is the error). */
  private async refusal (response: { statusCode: number, headers: Record<string, unknown>, body: Readable }): Promise<Error> {
    let text = ''
    try {
      text = await this.readAnswer(response.body, 'errorBytes', response.headers['content-length'])
    } catch (err) {
      // A body cut off short: the status alone says it.
      if (err instanceof GatewayError) return err
    }
    return runtimeErrorFrom(response.statusCode, text)
  }

  /** The events of a streamed answer, each parsed, within the limits and with the secrets cut out. */
  private async * parsedEvents (body: Readable): AsyncGenerator<unknown> {
    for await (const data of sseData(body, this.splitLimits)) {
      if (data === '[DONE]') return
      yield JSON.parse(this.redaction === null ? data : this.redaction.text(data))
    }
  }

  /** `body` with its `model` set to the runtime's own name for it, when one was given. */
  private withModel (body: unknown): unknown {
    if (this.model === undefined || typeof body !== 'object' || body === null || Array.isArray(body)) return body
    return { ...body, model: this.model }
  }

  /** An error with the headers' values (credentials) cut out of its message: a runtime may echo what it was sent. */
  private redacted (err: unknown): unknown {
    return this.headers === undefined ? err : withoutSecrets(err, Object.values(this.headers))
  }

  /**
   * Connections for whole answers, reused across requests. Made on first use: streamed requests relay over
   * sockets of their own, and making the pool took ~0.16 ms of a cold start.
   */
  private get pool (): Pool {
    if (this.connections === null) {
      const { socketPath } = this.address
      // llama-server closes idle keep-alive connections after 5 s; ours close sooner, so that no request is
      // ever sent on a socket the runtime is about to close. The pool takes the origin; paths get the prefix.
      this.connections = new Pool(addressTarget(this.address).origin, {
        connections: this.slots + 2, keepAliveTimeout: 4000, keepAliveMaxTimeout: 4000,
        ...(socketPath !== null ? { socketPath } : {}),
      })
      // Asked for after the close: the request gets the pool's own "destroyed" error, and no pool is left open.
      if (this.closed) void this.connections.destroy().catch(() => {})
    }
    return this.connections
  }
}

function isStaleConnection (err: unknown): boolean {
  const code = (err as { code?: string }).code
  return code === 'UND_ERR_SOCKET' || code === 'ECONNRESET' || code === 'EPIPE'
}

/** Two rewrites one after the other (either may be absent), or null for none. */
function chained (first: DataRewrite | null, then: DataRewrite | null): DataRewrite | null {
  if (first === null || then === null) return first ?? then
  return {
    push: (data) => {
      const once = first.push(data)
      return then.push(once ?? data) ?? once
    },
    end: () => {
      const rest = first.end()
      return Buffer.concat([then.push(rest) ?? rest, then.end()])
    },
  }
}

/**
 * Replaces the runtime's name for the model with the client's wherever an answer names it: `"model":"<name>"`, as
 * llama-server and Node write JSON, or `"model": "<name>"`, as Python's json module does (vLLM, SGLang). Only that
 * key with exactly that value: a message's text holding the words is escaped JSON and never matches.
 */
function modelRenaming (runtimeName: string, clientName: string): DataRewrite {
  const value = JSON.stringify(runtimeName)
  const replacement = JSON.stringify(clientName)
  const pairs = [`"model":`, `"model": `].map((key) => ({ from: Buffer.from(key + value), to: Buffer.from(key + replacement) }))
  return {
    push: (data) => {
      let out = data
      for (const { from, to } of pairs) out = replaceBytes(out, from, to)
      return out === data ? null : out
    },
    end: () => Buffer.alloc(0),
  }
}
