import type { FastifyReply, FastifyRequest } from 'fastify'
import { toErrorReply } from '../../core/server/error-handler.js'
import { RuntimeError } from '../../core/base/errors.js'
import { clientGone, EventStream } from '../../core/server/event-stream.js'
import { topLevelOverrides } from '../../core/config/request-options.js'
import { parseKeepAlive } from '../../core/base/units.js'
import { runtimeSampling } from '../../runtimes/index.js'
import { placeSystemMessages } from '../inference/chat-system-messages.js'
import { forcedAnswer, forcedChunks } from '../inference/forced-call.js'
import { forcedCallFields } from '../inference/forced-call-schema.js'
import { runLeased, type FailableStream } from '../inference/run-leased.js'
import { callContext } from '../call-hooks/call-context.js'
import { checkSchemaBudget } from '../inference/schema-budget.js'
import { systemPlacement } from '../inference/system-placement.js'
import type { Lease, LeaseSource } from '../leases/lease.js'
import { ResponseBuilder, type ChatChunk, type ResponseEvent } from './response-builder.js'
import type { ResponseItem, ResponseStore } from './response-store.js'
import type { TranslatedChat } from './responses-to-chat.js'
import { askedPriority } from '../inference/asked-priority.js'

/** OpenAI's Responses fields that are options of the contract (they win over `options`), each with the option it sets. */
const RESPONSES_OPTIONS: Readonly<Record<string, string>> = { temperature: 'temperature', top_p: 'top_p', max_output_tokens: 'max_tokens' }

/** One Responses request, read and translated: what the run needs. */
export interface ResponsesRun {
  /** The request's body as received (its settings are echoed in the response object). */
  body: Record<string, unknown> & { model: string, stream?: boolean | null, store?: boolean | null, options?: Record<string, unknown>, keep_alive?: unknown, reasoning?: { effort?: string | null } | null }
  /** The conversation of `previous_response_id`, or nothing. */
  history: readonly ResponseItem[]
  /** The request's own input items, item references resolved. */
  input: readonly ResponseItem[]
  /** What llama-server's chat completions gets: the whole conversation as messages (images inlined), the tools; the call forced. */
  chat: TranslatedChat
  /** Where a response is kept unless the request says `store: false`. */
  store: ResponseStore
  /** The key it is kept for (null: keys are off). */
  owner: string | null
}

/**
 * Runs a Responses request on llama-server's chat completions (its chat template, tool-call grammar and
 * reasoning parser) and answers in the Responses API's shapes: a stream of numbered events or the response
 * object. A stream that fails once open ends with OpenAI's `error` event and `response.failed`; before that, the
 * failure is thrown for its real status. The response is kept (input and output) unless `store` is false.
 */
export async function runResponses (leases: LeaseSource, request: FastifyRequest, reply: FastifyReply, run: ResponsesRun): Promise<unknown> {
  const { body } = run
  checkSchemaBudget(run.chat as unknown as Record<string, unknown>, request.server.config.limits)
  const overrides = topLevelOverrides(body, RESPONSES_OPTIONS)
  const builder = new ResponseBuilder(settingsOf(body))
  const stream = body.stream === true ? new EventStream(request, reply, 'sse') : null
  const failable: FailableStream | null = stream === null
    ? null
    : {
        get isOpen () { return stream.isOpen },
        get hasData () { return stream.hasData },
        comment: (text: string) => stream.comment(text),
        fail (err: unknown) {
          if (!stream.isOpen) throw err
          const error = toErrorReply(err, request.log)
          stream.writeRaw(sseText(builder.fail({ code: error.code, message: error.message, statusCode: error.statusCode })))
          stream.end()
        },
      }
  const answer = await runLeased(leases, {
    model: body.model,
    options: body.options,
    overrides,
    keepAliveMs: parseKeepAlive(body.keep_alive),
    log: request.log,
    usage: request.usage,
    priority: askedPriority(request.body),
    call: callContext(request),
    signal: stream?.signal ?? clientGone(reply),
    stream: failable,
    work: async (lease) => {
      // System messages as the model's template takes them (chat-system-messages.ts); a forced call is held to its
      // grammar, and its answer read as the call (plugins/inference/forced-call.ts).
      const { forced, ...request } = run.chat
      const messages = placeSystemMessages(request.messages, await systemPlacement(lease))
      const chat = { ...request, messages, ...(forced !== null ? forcedCallFields(forced) : {}), ...runtimeSampling(lease.sampling, 'chat'), model: lease.model.name }
      if (stream === null) {
        // A whole answer is asked whole: the call hooks then see it as one whole piece, as for a whole chat. The
        // builder names calls `call_<id>`: the id alone.
        const whole = await lease.endpoint.postJson<WholeChat>('/v1/chat/completions', { ...chat, stream: false }, lease.signal)
        builder.add(wholeAsChunk(forced !== null ? forcedAnswer(whole, forced, '') : whole))
      } else {
        // Resolves once llama-server's status is known good: a refusal (a prompt longer than the context) is still a 4xx.
        const answered = await lease.endpoint.events('/v1/chat/completions', { ...chat, stream: true, stream_options: { include_usage: true } }, lease.signal) as AsyncGenerator<ChatChunk & Record<string, unknown>>
        const chunks = forced !== null ? forcedChunks(answered, forced, '') : answered
        await send(stream, builder.start())
        await translate(lease, chunks, builder, stream)
      }
      const done = builder.finish()
      lease.countTokens(builder.tokens.input_tokens, builder.tokens.output_tokens, builder.tokens.input_tokens_details.cached_tokens)
      if (body.store !== false) {
        run.store.put({ response: builder.response, model: body.model, owner: run.owner, conversation: [...run.history, ...run.input, ...builder.response.output] })
      }
      if (stream === null) return builder.response
      await send(stream, done)
      stream.end()
      return undefined
    },
  })
  return answer ?? reply
}

/** llama-server's whole chat answer, as far as it is read here. */
type WholeChat = {
  choices?: Array<{ message?: { content?: unknown, reasoning_content?: unknown, tool_calls?: Array<{ id?: string, function?: { name?: string, arguments?: string } }> }, finish_reason?: string | null }>
  usage?: ChatChunk['usage']
}

/** A whole answer as the one chunk that holds all of it, for the builder. @throws when it holds no choice */
function wholeAsChunk (answer: WholeChat): ChatChunk {
  const choice = answer.choices?.[0]
  if (choice === undefined) throw new RuntimeError('the runtime answered the chat without a choice')
  const message = choice.message
  const text = (value: unknown): string | null => typeof value === 'string' ? value : null
  return {
    ...(answer.usage !== undefined ? { usage: answer.usage } : {}),
    choices: [{
      finish_reason: choice.finish_reason ?? 'stop',
      delta: {
        content: text(message?.content),
        reasoning_content: text(message?.reasoning_content),
        tool_calls: (message?.tool_calls ?? []).map((call, index) => ({ index, ...(call.id !== undefined ? { id: call.id } : {}), function: { ...(call.function?.name !== undefined ? { name: call.function.name } : {}), arguments: call.function?.arguments ?? '' } })),
      },
    }],
  }
}

async function translate (lease: Lease, chunks: AsyncGenerator<unknown>, builder: ResponseBuilder, stream: EventStream): Promise<void> {
  let finished = false
  // A token a chunk, counted as made, which a request cut short is booked with.
  lease.countSent(0)
  for await (const chunk of chunks as AsyncGenerator<ChatChunk & { error?: unknown }>) {
    if (chunk.error !== undefined) throw runtimeFailure(chunk.error)
    lease.firstToken()
    lease.countSent(1)
    const events = builder.add(chunk)
    if (chunk.choices?.[0]?.finish_reason) finished = true
    if (events.length > 0) await send(stream, events)
  }
  if (lease.signal.aborted) throw lease.signal.reason
  // llama-server's last chunk says why it stopped; a stream without one was cut.
  if (!finished) throw new Error('the runtime ended the stream early')
}

/** The response object's echo of the request's settings, as OpenAI's has them. */
function settingsOf (body: ResponsesRun['body']): Record<string, unknown> {
  return {
    created_at: Math.floor(Date.now() / 1000),
    background: false,
    error: null,
    incomplete_details: null,
    instructions: body.instructions ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
    metadata: body.metadata ?? {},
    model: body.model,
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    previous_response_id: body.previous_response_id ?? null,
    reasoning: { effort: body.reasoning?.effort ?? null, summary: null },
    store: body.store !== false,
    temperature: body.temperature ?? null,
    text: body.text ?? { format: { type: 'text' } },
    tool_choice: body.tool_choice ?? 'auto',
    tools: Array.isArray(body.tools) ? body.tools.map(toolEcho) : [],
    top_p: body.top_p ?? null,
    truncation: 'disabled',
    // `usage` comes with the finished response: the document has no null for it.
  }
}

/**
 * A function tool as the response object echoes it, with the fields OpenAI's FunctionTool requires: `strict` as the
 * request said, else false (llamagate holds a call to a tool's schema only when the call is forced), `parameters`
 * and `description` null where there were none. Other tools as they came.
 */
function toolEcho (tool: Record<string, unknown>): Record<string, unknown> {
  if (tool.type !== 'function') return tool
  return { ...tool, description: tool.description ?? null, parameters: tool.parameters ?? null, strict: tool.strict ?? false }
}

// OpenAI names each event (`event: response.output_text.delta`) besides its `type`; one write per chat chunk.
function sseText (events: ResponseEvent[]): Buffer {
  return Buffer.from(events.map((e) => `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`).join(''))
}

async function send (stream: EventStream, events: ResponseEvent[]): Promise<void> {
  if (!stream.writeRaw(sseText(events))) await stream.drained()
}

function runtimeFailure (error: unknown): RuntimeError {
  const message = typeof error === 'string' ? error : (error as { message?: string })?.message ?? JSON.stringify(error)
  return new RuntimeError(`the runtime failed: ${message}`)
}
