import type { FastifyReply, FastifyRequest } from 'fastify'
import { RuntimeError } from '../../core/base/errors.js'
import { clientGone, EventStream } from '../../core/server/event-stream.js'
import { topLevelOverrides } from '../../core/config/request-options.js'
import { parseKeepAlive } from '../../core/base/units.js'
import { runtimeSampling, tokenCount } from '../../runtimes/index.js'
import type { Lease, LeaseSource } from '../leases/lease.js'
import { conversationAffinity } from './conversation-affinity.js'
import { sessionOf } from './session-affinity.js'
import { forcedAnswer, forcedChunks } from './forced-call.js'
import { forcedCallFields, type ForcedCall } from './forced-call-schema.js'
import { runLeased } from './run-leased.js'
import { callContext } from '../call-hooks/call-context.js'
import { OPENAI_CHAT_FIELDS, runtimeFields } from './runtime-fields.js'
import { checkSchemaBudget } from './schema-budget.js'
import { askedPriority } from './asked-priority.js'

type Json = Record<string, unknown>

/** A chat chunk or whole answer of llama-server's, with the usage it ends with. */
export type ChatPiece = Json & {
  choices?: Array<Json & { delta?: Json, message?: Json, finish_reason?: string | null }>
  usage?: { prompt_tokens?: number, completion_tokens?: number, prompt_tokens_details?: { cached_tokens?: number } } | null
  timings?: { prompt_n?: number, cache_n?: number }
}

/** How a surface writes a chat answer that the gateway reads and reshapes (rather than relays). */
export interface ChatShapes {
  /** The whole answer (`stream: false`) in the surface's shape. */
  whole(answer: ChatPiece): unknown
  /** The SSE text one chunk makes ('' for none). */
  chunk(chunk: ChatPiece): string
  /** The SSE text that ends a finished stream. */
  end(): string
  /** More fields for llama-server's request (`timings_per_token`, for a stream that says its prompt first). */
  runtimeFields?: Json
}

/** A chat request the surface has made ready for llama-server's /v1/chat/completions: what runPassthrough takes. */
export interface ParsedChat {
  /** The body: `model`, `messages`, and the rest, `options` and `keep_alive` included. */
  body: Json & { model: string, stream?: boolean, options?: Json }
  /** The surface's top-level fields that are options, each with the option it sets. */
  topLevelOptions: Readonly<Record<string, string>>
  /** The call the request forces; null: none, the answer's text is read as it is (a transcription's). */
  forced: ForcedCall | null
  /** llama-server's call ids take this prefix (`call_`, Anthropic's `toolu_`). */
  idPrefix?: string
}

/**
 * Runs a chat on llama-server's chat completions, reading its answer rather than relaying it, for a surface whose
 * shapes are not llama-server's: a chat whose call is forced (forced-call-schema.ts; the answer's text is the call,
 * which forced-call.ts makes into tool calls), a transcription. `shapes` make the answer or its events the surface's. The slot, options, keep_alive, queueing and the error event of a stream that
 * fails once open are runPassthrough's.
 */
export async function runParsedChat (leases: LeaseSource, request: FastifyRequest, reply: FastifyReply, chat: ParsedChat, shapes: ChatShapes): Promise<unknown> {
  const { options, keep_alive: keepAlive, ...given } = chat.body
  const overrides = topLevelOverrides(given, chat.topLevelOptions)
  for (const field of Object.keys(chat.topLevelOptions)) delete given[field]
  const fields = { ...runtimeFields(given, OPENAI_CHAT_FIELDS), ...(chat.forced !== null ? forcedCallFields(chat.forced) : {}) }
  checkSchemaBudget(fields, request.server.config.limits)
  const streaming = chat.body.stream === true
  const stream = streaming ? new EventStream(request, reply, 'sse') : null
  const answer = await runLeased(leases, {
    model: chat.body.model,
    options,
    overrides,
    keepAliveMs: parseKeepAlive(keepAlive),
    log: request.log,
    usage: request.usage,
    priority: askedPriority(request.body),
    call: callContext(request),
    affinity: () => conversationAffinity(chat.body),
    // As received: a surface's body may have been reshaped (Anthropic's to OpenAI's) without its session fields.
    session: sessionOf(request.headers, request.body),
    signal: stream?.signal ?? clientGone(reply),
    stream,
    work: async (lease) => {
      // Usage at the end of the runtime's stream: the tokens the request is booked with.
      const body = { ...fields, ...runtimeSampling(lease.sampling, 'chat'), ...shapes.runtimeFields, model: lease.model.name, stream: streaming, ...(streaming ? { stream_options: { include_usage: true } } : {}) }
      if (stream === null) {
        const answer = await lease.endpoint.postJson<ChatPiece>('/v1/chat/completions', body, lease.signal)
        const whole = chat.forced !== null ? forcedAnswer(answer, chat.forced, chat.idPrefix) : answer
        countUsage(lease, whole)
        return shapes.whole(whole)
      }
      const chunks = await lease.endpoint.events('/v1/chat/completions', body, lease.signal) as AsyncGenerator<ChatPiece>
      lease.countSent(0)
      let finished = false
      for await (const chunk of chat.forced !== null ? forcedChunks(chunks, chat.forced, chat.idPrefix) : chunks) {
        if (chunk.error !== undefined) throw new RuntimeError(`the runtime failed: ${JSON.stringify(chunk.error)}`)
        lease.firstToken()
        lease.countSent(1)
        if (chunk.choices?.[0]?.finish_reason) finished = true
        countUsage(lease, chunk)
        const text = shapes.chunk(chunk)
        if (text !== '' && !stream.writeRaw(Buffer.from(text))) await stream.drained()
      }
      if (lease.signal.aborted) throw lease.signal.reason
      // llama-server's last chunk says why it stopped; a stream without one was cut.
      if (!finished) throw new Error('the runtime ended the stream early')
      stream.writeRaw(Buffer.from(shapes.end()))
      stream.end()
      return undefined
    },
  })
  return answer ?? reply
}

function countUsage (lease: Lease, piece: ChatPiece): void {
  const usage = piece.usage
  const prompt = tokenCount(usage?.prompt_tokens, 'usage.prompt_tokens')
  if (prompt === null) return
  const cached = tokenCount(usage?.prompt_tokens_details?.cached_tokens, 'usage.prompt_tokens_details.cached_tokens') ?? 0
  lease.countTokens(prompt, tokenCount(usage?.completion_tokens, 'usage.completion_tokens') ?? 0, cached)
}
