import type { FastifyReply, FastifyRequest } from 'fastify'
import { clientGone } from '../../core/client-gone.js'
import { EventStream } from '../../core/event-stream.js'
import { parseKeepAlive } from '../../core/keep-alive.js'
import { parseModelName } from '../../core/model-name.js'
import { runtimeSampling } from '../../runtimes/index.js'
import type { LeaseSource } from '../scheduler/lease.js'
import { runLeased } from '../scheduler/run-leased.js'

// The OpenAI fields that are sampling options; when given at the top level they win over `options`.
const TOP_LEVEL_SAMPLING = ['temperature', 'top_p', 'max_tokens', 'seed', 'stop', 'presence_penalty', 'frequency_penalty'] as const
const DONE_TAIL = Buffer.from('data: [DONE]\n\n')
const EVENT_END = Buffer.from('\n\n')

/**
 * Runs an OpenAI request (chat or text completion) against llama-server's own OpenAI endpoint. llama-server
 * already answers in OpenAI's shapes, with the model name we gave it as alias, so streamed bytes are passed
 * through as they come: no parsing, no re-encoding on the hot path. What the gateway adds is the options
 * layering, the slot, and an error event when the runtime stops mid-stream.
 */
export async function runOpenAi (leases: LeaseSource, request: FastifyRequest, reply: FastifyReply, path: string,
  body: Record<string, unknown> & { model: string, stream?: boolean, options?: Record<string, unknown> }): Promise<unknown> {
  parseModelName(body.model)
  const { options, keep_alive: keepAlive, max_completion_tokens: maxCompletionTokens, ...openai } = body
  // OpenAI's top-level fields win over the same settings in `options` (contract: Options).
  const requestOptions: Record<string, unknown> = { ...options }
  for (const key of TOP_LEVEL_SAMPLING) {
    if (openai[key] !== undefined && openai[key] !== null) requestOptions[key] = openai[key]
    delete openai[key]
  }
  if (maxCompletionTokens !== undefined && maxCompletionTokens !== null) requestOptions.max_tokens = maxCompletionTokens
  const streaming = body.stream === true
  const stream = streaming ? new EventStream(request, reply, 'sse') : null
  const progress = { tailBytes: DONE_TAIL.length, tail: Buffer.alloc(0) }
  const answer = await runLeased(leases, {
    model: body.model,
    request: { options: requestOptions, keepAliveMs: parseKeepAlive(keepAlive), signal: stream?.signal ?? clientGone(reply) },
    stream,
    work: async (lease) => {
      const runtimeBody = { ...openai, ...runtimeSampling(lease.sampling, 'chat'), model: lease.model.name, stream: streaming }
      if (stream === null) {
        const text = await lease.endpoint.post(path, runtimeBody, lease.signal)
        reply.type('application/json; charset=utf-8')
        return text
      }
      // The runtime's bytes go to the client as they come (runtimes/endpoint/stream-relay.ts); only the end is
      // looked at, to tell a finished stream ([DONE]) from one the runtime cut.
      await lease.endpoint.relay(path, JSON.stringify(runtimeBody), stream, progress, lease.signal)
      if (!progress.tail.equals(DONE_TAIL)) throw new Error('the runtime ended the stream early')
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
