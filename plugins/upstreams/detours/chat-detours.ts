import { timingsOf, type Detour, type UpstreamCalls } from './detour.js'

type Body = Record<string, unknown>
interface ChatChunk { choices?: Array<{ finish_reason?: string | null }>, usage?: unknown, timings?: unknown }

/**
 * Chat completions of an engine that may not say llama-server's `timings` (vLLM, Ollama's /v1; a bare llama-server
 * does): the surfaces that read token counts from `timings` (/api/chat, a templated /api/generate) get them from the
 * answer's `usage`. A stream is asked for its usage, which such engines only send when asked, in a chunk of its own
 * after the one that says why it stopped: that chunk is folded into the finish chunk, so that the stream ends as
 * llama-server's does. A caller that asked for the usage itself (/v1/responses) gets the chunks as they come.
 */
export function chatWithTimings (calls: UpstreamCalls, body: Body, signal: AbortSignal): Detour {
  return {
    whole: async () => withTimings(await calls.json('/v1/chat/completions', body, signal)),
    events: async () => {
      const options = body.stream_options as Body | undefined
      if (options?.include_usage === true) return timed(await calls.events('/v1/chat/completions', body, signal))
      return folded(await calls.events('/v1/chat/completions', { ...body, stream_options: { ...options, include_usage: true } }, signal))
    },
  }
}

function withTimings (answer: unknown): unknown {
  if (typeof answer !== 'object' || answer === null || 'timings' in answer) return answer
  const timings = timingsOf(answer)
  return timings === null ? answer : { ...answer, timings }
}

async function * timed (events: AsyncGenerator<unknown>): AsyncGenerator<unknown> {
  for await (const event of events) yield withTimings(event)
}

async function * folded (events: AsyncGenerator<unknown>): AsyncGenerator<unknown> {
  // The chunk that said why the answer stopped, held until the usage chunk (if any) is read.
  let finish: ChatChunk | null = null
  for await (const event of events as AsyncGenerator<ChatChunk>) {
    const isUsage = Array.isArray(event.choices) && event.choices.length === 0 && event.usage != null
    if (isUsage && finish !== null) {
      finish = { ...finish, usage: event.usage, ...(event.timings !== undefined ? { timings: event.timings } : {}) } as ChatChunk
      continue
    }
    if (finish !== null) yield withTimings(finish)
    finish = null
    if (event.choices?.[0]?.finish_reason) finish = event
    else if (!isUsage) yield withTimings(event)
  }
  if (finish !== null) yield withTimings(finish)
}
