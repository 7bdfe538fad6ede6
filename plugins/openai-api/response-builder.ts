import { randomBytes } from 'node:crypto'
import { tokenCount, toolCallIndex } from '../../runtimes/index.js'
import type { ResponseItem } from './response-store.js'

type Json = Record<string, unknown>

/** One event of a Responses stream, as OpenAI sends it: its `type`, its fields, its place in the stream. */
export type ResponseEvent = Json & { type: string, sequence_number: number }

/** OpenAI's response object (the fields the builder fills; the request's settings are given to it). */
export type ResponseObject = Json & { id: string, status: string, output: ResponseItem[] }

/** A piece of a tool call in a chat chunk: the first has its id and name, the rest more of its arguments. */
export interface ChatToolCallDelta { index?: number, id?: string, function?: { name?: string, arguments?: string } }

/** A chunk of llama-server's streamed chat completion, as far as it is read here. */
export interface ChatChunk {
  choices?: Array<{
    delta?: { content?: string | null, reasoning_content?: string | null, tool_calls?: ChatToolCallDelta[] }
    finish_reason?: string | null
  }>
  usage?: { prompt_tokens?: number, completion_tokens?: number, prompt_tokens_details?: { cached_tokens?: number } }
}

/** The tokens of an answer, in the Responses API's words. */
export interface ResponseUsage {
  input_tokens: number
  input_tokens_details: { cached_tokens: number, cache_write_tokens: number }
  output_tokens: number
  output_tokens_details: { reasoning_tokens: number }
  total_tokens: number
}

interface OpenItem {
  kind: 'message' | 'reasoning' | 'function_call'
  index: number
  id: string
  text: string
  /** The chat chunk's tool call index, for a function call. */
  toolIndex?: number
  name?: string
  callId?: string
}

/** An id in OpenAI's form: a prefix (`resp`, `msg`, `fc`, `rs`) and 48 hex digits. */
export function responseId (prefix: string): string {
  return `${prefix}_${randomBytes(24).toString('hex')}`
}

/**
 * Builds a response and its stream events from llama-server's chat completion chunks, as OpenAI's Responses API
 * sends them: every event numbered (`sequence_number` from 0), output items opened and closed around their deltas
 * (`output_index`, `item_id`, `content_index`), text in a `message` item, reasoning (llama-server's
 * `reasoning_content`) in a `reasoning` item of `reasoning_text`, each tool call in a `function_call` item whose
 * arguments stream as `response.function_call_arguments.delta`. A whole (not streamed) answer uses the same
 * builder and keeps only the response.
 */
export class ResponseBuilder {
  readonly response: ResponseObject
  private sequence = 0
  private open: OpenItem | null = null
  private finishReason: string | null = null
  private usage: ResponseUsage | null = null

  /** `response`: the response object with the request's settings; its id, status and output are set here. */
  constructor (response: Json) {
    this.response = { id: responseId('resp'), object: 'response', ...response, status: 'in_progress', output: [] } as ResponseObject
  }

  /** `response.created` and `response.in_progress`. */
  start (): ResponseEvent[] {
    return [
      this.event('response.created', { response: { ...this.response, output: [] } }),
      this.event('response.in_progress', { response: { ...this.response, output: [] } }),
    ]
  }

  /** The events one chat chunk makes. */
  add (chunk: ChatChunk): ResponseEvent[] {
    const events: ResponseEvent[] = []
    this.readUsage(chunk)
    const choice = chunk.choices?.[0]
    if (choice === undefined) return events
    if (choice.finish_reason) this.finishReason = choice.finish_reason
    const delta = choice.delta
    if (delta === undefined) return events
    if (delta.reasoning_content) this.appendText(events, 'reasoning', delta.reasoning_content)
    if (delta.content) this.appendText(events, 'message', delta.content)
    for (const call of delta.tool_calls ?? []) this.appendCall(events, call)
    return events
  }

  /** Whether the answer stopped at its token limit (the response is then `incomplete`). */
  get truncated (): boolean { return this.finishReason === 'length' }

  /** The usage the runtime reported, or zeros. */
  get tokens (): ResponseUsage { return this.usage ?? usageOf(0, 0, 0) }

  /** Closes the last item and ends the response: `response.completed`, or `response.incomplete` at the token limit. */
  finish (): ResponseEvent[] {
    const events: ResponseEvent[] = []
    this.close(events, this.truncated ? 'incomplete' : 'completed')
    const now = Math.floor(Date.now() / 1000)
    Object.assign(this.response, this.truncated
      ? { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } }
      : { status: 'completed', completed_at: now })
    this.response.usage = this.tokens
    events.push(this.event(this.truncated ? 'response.incomplete' : 'response.completed', { response: this.response }))
    return events
  }

  /**
   * Ends a stream that failed: OpenAI's `error` event (its code as the gateway has it), then `response.failed` with
   * what was made so far, its error's code one of the document's `ResponseErrorCode`s (responseErrorCode).
   */
  fail (error: { code: string | null, message: string, statusCode?: number }): ResponseEvent[] {
    Object.assign(this.response, { status: 'failed', error: responseError(error) })
    if (this.usage !== null) this.response.usage = this.usage
    return [
      this.event('error', { code: error.code, message: error.message, param: null }),
      this.event('response.failed', { response: this.response }),
    ]
  }

  private appendText (events: ResponseEvent[], kind: 'message' | 'reasoning', delta: string): void {
    const item = this.open?.kind === kind ? this.open : this.openItem(events, kind)
    item.text += delta
    const type = kind === 'message' ? 'response.output_text.delta' : 'response.reasoning_text.delta'
    events.push(this.event(type, { item_id: item.id, output_index: item.index, content_index: 0, delta, ...(kind === 'message' ? { logprobs: [] } : {}) }))
  }

  private appendCall (events: ResponseEvent[], call: ChatToolCallDelta): void {
    const toolIndex = toolCallIndex(call.index, 0)
    let item = this.open
    if (item?.kind !== 'function_call' || item.toolIndex !== toolIndex) {
      item = this.openItem(events, 'function_call', { toolIndex, name: call.function?.name ?? '', callId: call.id ? `call_${call.id}` : responseId('call') })
    }
    const delta = call.function?.arguments
    if (!delta) return
    item.text += delta
    events.push(this.event('response.function_call_arguments.delta', { item_id: item.id, output_index: item.index, delta }))
  }

  private openItem (events: ResponseEvent[], kind: OpenItem['kind'], call?: Pick<OpenItem, 'toolIndex' | 'name' | 'callId'>): OpenItem {
    this.close(events, 'completed')
    const prefix = kind === 'message' ? 'msg' : kind === 'reasoning' ? 'rs' : 'fc'
    const item: OpenItem = { kind, index: this.response.output.length, id: responseId(prefix), text: '', ...call }
    this.open = item
    // The item's place in `output` is taken now, so that indices follow the order items were opened.
    this.response.output.push(this.itemOf(item, 'in_progress'))
    events.push(this.event('response.output_item.added', { output_index: item.index, item: this.itemOf(item, 'in_progress') }))
    if (kind !== 'function_call') {
      events.push(this.event('response.content_part.added', { item_id: item.id, output_index: item.index, content_index: 0, part: this.partOf(item, '') }))
    }
    return item
  }

  private close (events: ResponseEvent[], status: 'completed' | 'incomplete'): void {
    const item = this.open
    if (item === null) return
    this.open = null
    const where = { item_id: item.id, output_index: item.index }
    if (item.kind === 'function_call') {
      events.push(this.event('response.function_call_arguments.done', { ...where, name: item.name, arguments: item.text }))
    } else {
      const done = item.kind === 'message' ? 'response.output_text.done' : 'response.reasoning_text.done'
      events.push(this.event(done, { ...where, content_index: 0, text: item.text, ...(item.kind === 'message' ? { logprobs: [] } : {}) }))
      events.push(this.event('response.content_part.done', { ...where, content_index: 0, part: this.partOf(item, item.text) }))
    }
    const whole = this.itemOf(item, status)
    this.response.output[item.index] = whole
    events.push(this.event('response.output_item.done', { output_index: item.index, item: whole }))
  }

  private itemOf (item: OpenItem, status: string): ResponseItem {
    const done = status !== 'in_progress'
    switch (item.kind) {
      case 'message':
        return { id: item.id, type: 'message', status, role: 'assistant', content: done ? [this.partOf(item, item.text)] : [] }
      case 'reasoning':
        return { id: item.id, type: 'reasoning', status, summary: [], content: done ? [this.partOf(item, item.text)] : [] }
      case 'function_call':
        return { id: item.id, type: 'function_call', status, call_id: item.callId, name: item.name, arguments: done ? item.text : '' }
    }
  }

  private partOf (item: OpenItem, text: string): Json {
    return item.kind === 'message' ? { type: 'output_text', text, annotations: [], logprobs: [] } : { type: 'reasoning_text', text }
  }

  // The run asks for `stream_options.include_usage`: llama-server's last chunk holds the usage (no choices). A count
  // that cannot be is an error of the answer (tokenCount), never booked.
  private readUsage (chunk: ChatChunk): void {
    const { usage } = chunk
    const prompt = tokenCount(usage?.prompt_tokens, 'usage.prompt_tokens')
    if (prompt !== null) {
      const cached = tokenCount(usage?.prompt_tokens_details?.cached_tokens, 'usage.prompt_tokens_details.cached_tokens') ?? 0
      this.usage = usageOf(prompt, cached, tokenCount(usage?.completion_tokens, 'usage.completion_tokens') ?? 0)
    }
  }

  private event (type: string, fields: Json): ResponseEvent {
    return { type, ...fields, sequence_number: this.sequence++ }
  }
}

function usageOf (input: number, cached: number, output: number): ResponseUsage {
  // llama-server does not count reasoning tokens apart from the answer's; what a prompt leaves in a slot's cache is
  // not written apart (it costs nothing more here), so none is counted as written.
  return { input_tokens: input, input_tokens_details: { cached_tokens: cached, cache_write_tokens: 0 }, output_tokens: output, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: input + output }
}

// OpenAI's ResponseErrorCode (its OpenAPI document): the codes a failed response's error may have.
const RESPONSE_ERROR_CODES = new Set([
  'server_error', 'rate_limit_exceeded', 'invalid_prompt', 'vector_store_timeout', 'invalid_image', 'invalid_image_format',
  'invalid_base64_image', 'invalid_image_url', 'image_too_large', 'image_too_small', 'image_parse_error',
  'image_content_policy_violation', 'invalid_image_mode', 'image_file_too_large', 'unsupported_image_media_type',
  'empty_image_file', 'failed_to_download_image', 'image_file_not_found',
])

/**
 * A failed response's error as the document types it: the gateway's code where it is one of OpenAI's, else
 * `rate_limit_exceeded` for a 429, `invalid_prompt` for another 4xx, `server_error` for the rest; the gateway's own
 * code (`model_stopped`, `runtime_error`) then leads the message, so that nothing it said is lost.
 */
export function responseError (error: { code: string | null, message: string, statusCode?: number }): { code: string, message: string } {
  if (error.code !== null && RESPONSE_ERROR_CODES.has(error.code)) return { code: error.code, message: error.message }
  const status = error.statusCode ?? 500
  const code = status === 429 ? 'rate_limit_exceeded' : status >= 400 && status < 500 ? 'invalid_prompt' : 'server_error'
  return { code, message: error.code !== null && error.code !== code ? `${error.code}: ${error.message}` : error.message }
}
