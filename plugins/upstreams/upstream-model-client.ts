import type { Readable } from 'node:stream'
import type { UpstreamConfig } from './upstream-config.js'
import {
  HttpPool, RelaySockets, chainedRewrites, relayStream, replaceBytes, sseData, type DataRewrite, type ModelEndpoint, type ReadLimits,
  type RelayProgress, type RelaySink, type RuntimeAddress,
} from '../../runtimes/index.js'
import { answerLines } from './detours/answer-lines.js'
import { Redaction, withoutSecrets } from './redaction.js'
import { upstreamReadLimits } from './upstream-limits.js'

/**
 * The HTTP client of one model of an upstream, in the upstream's own paths: its URL (and path), its key as a Bearer
 * token, the model's own name in every body and the client's name for it put back in every answer, its answers read
 * within config.yaml's limits with the key cut out of all of them and of every error, and its streams' connections
 * kept for the next stream. The transport is the llama-server client's (runtimes/endpoint: the pool, the relay);
 * what a remote needs is here. UpstreamEndpoint makes llama-server's calls with it.
 */
export class UpstreamModelClient implements ModelEndpoint {
  /** For messages: "<model> (upstream <name>)". */
  readonly name: string
  private readonly address: RuntimeAddress
  private readonly headers: Record<string, string> | undefined
  private readonly http: HttpPool
  /** Unlike llama-server, engines keep a connection after a streamed answer: the next stream skips the connect (and an https upstream's handshake). */
  private readonly streams = new RelaySockets()
  /** Puts the client's name for the model back into what the upstream answered, or null when the names are the same. */
  private readonly renamed: DataRewrite | null
  /** Cuts the key out of everything read from the upstream; null without a key. */
  private readonly redaction: Redaction | null
  private readonly limits: ReadLimits
  private closed = false

  constructor (upstream: UpstreamConfig, private readonly remoteModel: string) {
    this.name = `${remoteModel} (upstream ${upstream.name})`
    this.address = { baseUrl: upstream.url, socketPath: null }
    this.headers = upstream.key !== null ? { authorization: `Bearer ${upstream.key}` } : undefined
    this.limits = upstreamReadLimits(this.name, upstream.limits)
    // A connection for each request it may take at once, and two to spare.
    this.http = new HttpPool({ address: this.address, connections: upstream.maxConcurrent + 2, limits: this.limits, ...(this.headers ? { headers: this.headers } : {}) })
    // Answers say the name the client asked for (the prefix's), as a local model's do.
    const servedAs = upstream.prefix + remoteModel
    this.renamed = servedAs !== remoteModel ? modelRenaming(remoteModel, servedAs) : null
    this.redaction = this.headers === undefined ? null : Redaction.of(Object.values(this.headers))
  }

  async post (path: string, body: unknown, signal: AbortSignal): Promise<string> {
    const text = await this.secretless(async () => this.http.read(await this.request(path, body, signal)))
    const clean = this.redaction === null ? text : this.redaction.text(text)
    return this.renamed === null ? clean : (this.renamed.push(Buffer.from(clean))?.toString('utf8') ?? clean)
  }

  async postJson<T = unknown> (path: string, body: unknown, signal: AbortSignal): Promise<T> {
    return JSON.parse(await this.post(path, body, signal)) as T
  }

  /** A streamed answer's Server-Sent Events, each parsed, up to `[DONE]`, within the limits and with the key cut out. */
  async events (path: string, body: unknown, signal: AbortSignal): Promise<AsyncGenerator<unknown>> {
    return this.parsedEvents(await this.request(path, body, signal))
  }

  /** A streamed answer's events whether SSE or NDJSON (Ollama's own API), for the detours (answer-lines.ts). */
  async lines (path: string, body: unknown, signal: AbortSignal): Promise<AsyncGenerator<unknown>> {
    return answerLines(await this.request(path, body, signal), this.limits, this.redaction)
  }

  /** The relay (stream-relay.ts) with the key sent, the model renamed both ways, the key cut out, and the connection kept. */
  async relay (path: string, payload: string, sink: RelaySink, progress: RelayProgress, signal: AbortSignal): Promise<void> {
    const rewrite = chainedRewrites(this.redaction?.stream() ?? null, this.renamed)
    await this.secretless(() => relayStream({
      name: this.name, address: this.address, path, payload: JSON.stringify(this.withModel(JSON.parse(payload))), sink, progress, signal,
      limits: this.limits, ...(this.headers ? { headers: this.headers } : {}), ...(!this.closed ? { sockets: this.streams } : {}),
      ...(rewrite !== null ? { rewrite } : {}),
    }))
  }

  /** Closes the pooled and the kept connections. */
  async close (): Promise<void> {
    this.closed = true
    this.streams.close()
    await this.http.close()
  }

  /** The POST, its body with the upstream's name for the model: the answer's body once its status is known good. */
  private request (path: string, body: unknown, signal: AbortSignal): Promise<Readable> {
    return this.secretless(() => this.http.post(path, JSON.stringify(this.withModel(body)), signal))
  }

  private async * parsedEvents (body: Readable): AsyncGenerator<unknown> {
    for await (const data of sseData(body, this.limits)) {
      if (data === '[DONE]') return
      yield JSON.parse(this.redaction === null ? data : this.redaction.text(data))
    }
  }

  /** `body` with its `model` set to the upstream's own name for it. */
  private withModel (body: unknown): unknown {
    if (typeof body !== 'object' || body === null || Array.isArray(body)) return body
    return { ...body, model: this.remoteModel }
  }

  /** `call`'s errors with the key cut out of their messages: an upstream may echo what it was sent. */
  private async secretless<T> (call: () => Promise<T>): Promise<T> {
    try {
      return await call()
    } catch (err) {
      throw this.headers === undefined ? err : withoutSecrets(err, Object.values(this.headers))
    }
  }
}

/**
 * Replaces the upstream's name for the model with the client's wherever an answer names it: `"model":"<name>"`, as
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
