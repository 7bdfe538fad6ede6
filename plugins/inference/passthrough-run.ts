import type { FastifyReply, FastifyRequest } from 'fastify'
import { clientGone, EventStream } from '../../core/server/event-stream.js'
import { topLevelOverrides } from '../../core/config/request-options.js'
import { parseKeepAlive } from '../../core/base/units.js'
import { answerUsage, runtimeSampling, USAGE_TAIL_BYTES, type DataRewrite, type RelayProgress } from '../../runtimes/index.js'
import { answerCachedTokens } from '../../runtimes/endpoint/answer-usage.js'
import type { Lease, LeaseSource } from '../leases/lease.js'
import { conversationAffinity } from './conversation-affinity.js'
import { sessionOf } from './session-affinity.js'
import { runLeased } from './run-leased.js'
import { callContext } from '../call-hooks/call-context.js'
import { runtimeFields } from './runtime-fields.js'
import { checkSchemaBudget } from './schema-budget.js'
import { askedPriority } from './asked-priority.js'

const EVENT_END = Buffer.from('\n\n')

/** One llama-server endpoint that already speaks a client API's shapes, and how its streams end. */
export interface PassthroughRoute {
  /** llama-server's path, which is also ours (`/v1/chat/completions`, `/v1/messages`, ...). */
  path: string
  /** The API's top-level fields that are options, each with the option it sets: they win over `options`. */
  topLevelOptions: Readonly<Record<string, string>>
  /** The last bytes of a stream that finished (`data: [DONE]\n\n`); null when ending the body is the sign. */
  streamEnd: Buffer | null
  /** The body fields llama-server may be sent on this route (runtime-fields.ts); the others are not sent. */
  fields: ReadonlySet<string>
  /** The stream says its prompt's tokens only in its first event (Anthropic's message_start): keep its head. */
  promptInHead?: boolean
  /**
   * What the body becomes once its model's runtime is known (its chat template's rules: system-placement.ts); it
   * gets the fields as received each time the request runs, and returns them, changed or not.
   */
  shape?: (fields: Record<string, unknown>, lease: Lease) => Promise<Record<string, unknown>>
  /** The whole answer (JSON text) as the API's document has it: what llama-server leaves out filled in. @default as it came */
  whole?: (text: string) => string
  /** The rewrite of one request's stream (stream-relay.ts), to the same end; null for none. @default none */
  streamRewrite?: (body: PassthroughBody) => DataRewrite | null
}

export type PassthroughBody = Record<string, unknown> & { model: string, stream?: boolean, options?: Record<string, unknown> }

/**
 * Runs a request against a llama-server endpoint that answers in the client's own shapes (OpenAI chat and
 * text completions, Anthropic Messages) with the model name we gave it as alias: streamed
 * bytes are passed through as they come, no parsing, no re-encoding on the hot path. What the gateway adds
 * is the options layering, keep_alive, the slot, and an error event when the runtime stops mid-stream.
 */
export async function runPassthrough (leases: LeaseSource, request: FastifyRequest, reply: FastifyReply, route: PassthroughRoute, body: PassthroughBody): Promise<unknown> {
  const { options, keep_alive: keepAlive, ...given } = body
  // The API's top-level fields win over the same settings in `options` (contract: Options): handed over as such.
  const overrides = topLevelOverrides(given, route.topLevelOptions)
  for (const field of Object.keys(route.topLevelOptions)) delete given[field]
  const fields = runtimeFields(given, route.fields)
  checkSchemaBudget(fields, request.server.config.limits)
  const streaming = body.stream === true
  const stream = streaming ? new EventStream(request, reply, 'sse') : null
  // The tail holds the last event, where llama-server says how many tokens the answer took.
  const progress: RelayProgress = { tailBytes: USAGE_TAIL_BYTES, tail: Buffer.alloc(0), ...(route.promptInHead === true ? { headBytes: USAGE_TAIL_BYTES } : {}) }
  const rewrite = streaming ? route.streamRewrite?.(body) ?? null : null
  if (rewrite !== null) progress.rewrite = rewrite
  const answer = await runLeased(leases, {
    model: body.model,
    options,
    overrides,
    keepAliveMs: parseKeepAlive(keepAlive),
    log: request.log,
    usage: request.usage,
    priority: askedPriority(request.body),
    call: callContext(request),
    affinity: () => conversationAffinity(body),
    // As received: a surface's body may have been reshaped (Anthropic's to OpenAI's) without its session fields.
    session: sessionOf(request.headers, request.body),
    signal: stream?.signal ?? clientGone(reply),
    stream,
    work: async (lease) => {
      progress.firstData = lease.firstToken
      const shaped = route.shape === undefined ? fields : await route.shape(fields, lease)
      const runtimeBody = { ...shaped, ...runtimeSampling(lease.sampling, 'chat'), model: lease.model.name, stream: streaming }
      if (stream === null) {
        const text = await lease.endpoint.post(route.path, runtimeBody, lease.signal)
        countTokens(lease, text)
        reply.type('application/json; charset=utf-8')
        return route.whole !== undefined ? route.whole(text) : text
      }
      // What a client that leaves early was sent is what it pays for (plugins/usage): counted from 0 as events go.
      lease.countSent(0)
      progress.onEvents = lease.countSent
      // The runtime's bytes go to the client as they come (runtimes/endpoint/stream-relay.ts); only the end is
      // looked at, to tell a finished stream from one the runtime cut.
      await lease.endpoint.relay(route.path, JSON.stringify(runtimeBody), stream, progress, lease.signal)
      if (route.streamEnd !== null && !progress.tail.subarray(-route.streamEnd.length).equals(route.streamEnd)) throw new Error('the runtime ended the stream early')
      countTokens(lease, progress.tail.toString('utf8'), progress.head?.toString('utf8'))
      stream.end()
      return undefined
    },
    // A runtime that died mid-event left half an event: close it so that the error event reads cleanly.
    beforeErrorEvent: () => {
      const { tail } = progress
      const endsEvent = tail.length === 0 || (tail[tail.length - 1] === 0x0a && tail[tail.length - 2] === 0x0a)
      if (!endsEvent) stream!.writeRaw(EVENT_END)
    },
  })
  return answer ?? reply
}

function countTokens (lease: Lease, answerEnd: string, answerStart?: string): void {
  const usage = answerUsage(answerEnd)
  // Only the first event of the head is the start: the next may already be the end, with other counts.
  const firstEvent = answerStart?.split('\n\n', 1)[0]
  const prompt = usage?.prompt ?? (firstEvent !== undefined ? answerUsage(firstEvent)?.prompt : null) ?? null
  // The cached part comes from wherever the prompt's count did.
  const cached = answerCachedTokens(usage?.prompt === null && firstEvent !== undefined ? firstEvent : answerEnd)
  if (usage !== null) lease.countTokens(prompt ?? 0, usage.generated ?? 0, cached)
}
