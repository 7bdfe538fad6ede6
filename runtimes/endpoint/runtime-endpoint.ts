import type { Readable } from 'node:stream'
import { HttpPool } from './http-pool.js'
import type { ModelEndpoint } from './model-endpoint.js'
import type { RuntimeAddress } from './runtime-address.js'
import { sseData } from './sse-events.js'
import { relayStream, type RelayProgress, type RelaySink } from './stream-relay.js'

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
  /** Of its running or last task's prompt: the tokens its cache shared with it, and those it reused (the patch set). */
  prompt_reuse?: { common?: number, cached?: number }
}

/**
 * A slot as `slotCaches` tells it; `salt`: the `cache_salt` its cache was computed with ('' for none); `task`: the
 * last task it took (none since it started or was restored), with `common` of that task's prompt tokens in the cache
 * it held (where the build says) and `reused` of them not evaluated again.
 */
export interface SlotCache { id: number, nCtx: number, tokens: number, busy: boolean, salt: string, task?: number, common?: number, reused?: number }
/** What a slot save or restore moved; a save also says the salt of what it saved (a build with the patch set). */
export interface SlotTransfer { tokens: number, bytes: number, ms: number, salt?: string }

export interface RuntimeEndpointOptions {
  /** The model it serves, for messages ("the runtime of model X ..."). */
  name: string
  address: RuntimeAddress
  /** Its slots: the pool keeps a connection for each and two to spare. */
  slots: number
}

/**
 * The one object that speaks to one running llama-server: whole JSON answers over a pool of kept-alive
 * connections, parsed event streams for surfaces that reshape them, the raw relay for those that pass them
 * through, and llama-server's own routes (metrics, slots, their saves). Nothing outside runtimes/ knows the address
 * or holds a connection; surfaces get an endpoint through their lease (a ModelEndpoint, as an upstream's model is).
 */
export class RuntimeEndpoint implements ModelEndpoint {
  readonly name: string
  readonly address: RuntimeAddress
  private readonly http: HttpPool

  constructor (options: RuntimeEndpointOptions) {
    this.name = options.name
    this.address = options.address
    this.http = new HttpPool({ address: options.address, connections: options.slots + 2 })
  }

  /** The runtime's whole answer to a POST, as text. @throws the runtime's own error, as a gateway error */
  async post (path: string, body: unknown, signal: AbortSignal): Promise<string> {
    return this.http.read(await this.http.post(path, JSON.stringify(body), signal))
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
    return parsedEvents(await this.http.post(path, JSON.stringify(body), signal))
  }

  /**
   * Streams the answer to a POST straight into `sink`, chunk by chunk as llama-server framed it (see
   * stream-relay.ts). `payload` is the JSON body, already serialized.
   */
  relay (path: string, payload: string, sink: RelaySink, progress: RelayProgress, signal: AbortSignal): Promise<void> {
    return relayStream({ name: this.name, address: this.address, path, payload, sink, progress, signal })
  }



  /** What llama-server says of itself (`GET /props`): its slots' context, its template, its modalities. */
  async props (signal: AbortSignal): Promise<Record<string, unknown>> {
    return JSON.parse(await this.http.get('/props', signal)) as Record<string, unknown>
  }

  /**
   * The runtime's own statistics in Prometheus' text format (`GET /metrics`; llama-server serves it when started
   * with `--metrics`). @throws when it does not answer 200 before `signal` aborts
   */
  async metricsText (signal: AbortSignal): Promise<string> {
    return this.http.get('/metrics', signal)
  }

  /** How full its context is: the tokens held by slots processing a request, and all the slots' context, from `GET /slots`. */
  async contextUse (signal: AbortSignal): Promise<{ busyTokens: number, totalTokens: number }> {
    const slots = JSON.parse(await this.http.get('/slots', signal)) as SlotState[]
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
    const slots = JSON.parse(await this.http.get('/slots', signal)) as SlotState[]
    return slots.filter((slot) => slot.is_processing).map((slot) =>
      `${slot.id}:${slot.id_task ?? ''}:${slot.n_prompt_tokens_processed ?? ''}:${slot.next_token?.[0]?.n_decoded ?? ''}`)
  }

  /** Each slot's id, context, and how many tokens its cache holds (0 for one never used, or cleared). */
  async slotCaches (signal: AbortSignal): Promise<SlotCache[]> {
    const slots = JSON.parse(await this.http.get('/slots', signal)) as SlotState[]
    return slots.map((slot) => ({
      id: slot.id ?? 0,
      nCtx: slot.n_ctx ?? 0,
      tokens: slot.n_prompt_tokens ?? 0,
      busy: slot.is_processing === true,
      salt: typeof slot.cache_salt === 'string' ? slot.cache_salt : '',
      ...(typeof slot.id_task === 'number' ? { task: slot.id_task } : {}),
      ...(typeof slot.prompt_reuse?.common === 'number' ? { common: slot.prompt_reuse.common } : {}),
      ...(typeof slot.prompt_reuse?.cached === 'number' ? { reused: slot.prompt_reuse.cached } : {}),
    }))
  }

  /**
   * Writes a slot's cache (its tokens and their KV state) to `filename` in the folder the runtime was started with
   * (`--slot-save-path`); llama-server waits for the slot to be idle first. @throws as `post`
   */
  async saveSlot (id: number, filename: string, signal: AbortSignal): Promise<SlotTransfer> {
    return this.save(`/slots/${id}?action=save`, { filename }, signal)
  }

  /**
   * Writes what llama-server's RAM prompt cache holds at `index` (0 the most recently used) to `filename`, as a save
   * of the slot that computed it would be (a build with llamagate's patch set). @returns null past its last
   * @throws as `post`
   */
  async saveCachedPrompt (index: number, filename: string, signal: AbortSignal): Promise<SlotTransfer | null> {
    try {
      return await this.save('/slots/0?action=save', { filename, cached: index }, signal)
    } catch (err) {
      // llama-server's 404, as the gateway error it becomes: the list has no more.
      if ((err as Error).message.includes('No cached prompt at index')) return null
      throw err
    }
  }

  private async save (path: string, body: Record<string, unknown>, signal: AbortSignal): Promise<SlotTransfer> {
    const answer = await this.postJson<{ n_saved?: number, n_written?: number, cache_salt?: unknown, timings?: { save_ms?: number } }>(path, body, signal)
    return { tokens: answer.n_saved ?? 0, bytes: answer.n_written ?? 0, ms: answer.timings?.save_ms ?? 0, ...(typeof answer.cache_salt === 'string' ? { salt: answer.cache_salt } : {}) }
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
    await this.http.close()
  }
}

/** The events of a streamed answer, each parsed, up to `[DONE]`. */
async function * parsedEvents (body: Readable): AsyncGenerator<unknown> {
  for await (const data of sseData(body)) {
    if (data === '[DONE]') return
    yield JSON.parse(data)
  }
}
