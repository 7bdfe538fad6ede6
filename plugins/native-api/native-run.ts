import type { FastifyReply, FastifyRequest } from 'fastify'
import { RuntimeError, type ContextExceededError } from '../../core/base/errors.js'
import { clientGone, EventStream, streamFormatOf } from '../../core/server/event-stream.js'
import { runtimeSampling } from '../../runtimes/index.js'
import { conversationAffinity } from '../inference/conversation-affinity.js'
import { sessionOf } from '../inference/session-affinity.js'
import { runLeased } from '../inference/run-leased.js'
import { callContext } from '../call-hooks/call-context.js'
import { checkSchemaBudget } from '../inference/schema-budget.js'
import type { Lease, LeaseSource } from '../leases/lease.js'
import { cachedTokens, doneReason, ollamaStats, type OllamaStats, type RuntimeTimings } from './stats.js'
import { logprobFields, ollamaLogprobs, type OllamaLogprob } from './logprobs.js'
import { collectToolCalls, ollamaToolCalls, type ToolCall, type ToolCallDelta } from './tool-calls.js'
import { askedPriority } from '../inference/asked-priority.js'

/** One native generation: which runtime endpoint it uses and what the request asked for. */
export interface NativeRun {
  kind: 'chat' | 'generate'
  model: string
  /**
   * `chat` → llama-server's /v1/chat/completions (its Jinja template); `completion` → /completion (raw prompt);
   * `infill` → /infill (a prefix and a suffix framed by the model's fill-in-the-middle tokens).
   */
  endpoint: 'chat' | 'completion' | 'infill'
  /** The runtime request without sampling options and `stream`. */
  body: Record<string, unknown>
  stream: boolean
  options: Record<string, unknown> | undefined
  /** The request's `keep_alive` in ms (core/base/units.ts parseKeepAlive); undefined: not sent. */
  keepAliveMs: number | undefined
  /** A conversation longer than the model can hold: drop its oldest messages and say true (Ollama's `truncate`). */
  shorten?: (err: ContextExceededError) => boolean
  /** What `body` becomes once its model's runtime is known (its chat template's rules), each time the request runs. */
  shape?: (body: Record<string, unknown>, lease: Lease) => Promise<Record<string, unknown>>
  /** Ollama's `logprobs`: each token's log probability, with its `top` likeliest alternatives (0 to 20). */
  logprobs?: { top: number }
}

/** A fragment of the runtime's answer, whichever endpoint it came from. */
interface Fragment { text: string, thinking?: string, toolCalls?: ToolCallDelta[], finishReason?: string | null, timings?: RuntimeTimings, logprobs?: OllamaLogprob[], error?: unknown }

const EMPTY = ''

function fragmentOf (run: NativeRun, event: any): Fragment {
  if (event.error) return { text: EMPTY, error: event.error }
  if (run.endpoint !== 'chat') {
    return {
      text: event.content ?? EMPTY, finishReason: event.stop ? (event.stop_type === 'limit' ? 'length' : 'stop') : undefined, timings: event.timings,
      ...(run.logprobs ? { logprobs: ollamaLogprobs(event.completion_probabilities, run.logprobs.top) } : {}),
    }
  }
  const choice = event.choices?.[0]
  const delta = choice?.delta ?? choice?.message
  // llama-server splits reasoning out of the answer (its default reasoning format) into reasoning_content.
  return {
    text: delta?.content ?? EMPTY, thinking: delta?.reasoning_content || undefined, toolCalls: delta?.tool_calls, finishReason: choice?.finish_reason, timings: event.timings,
    ...(run.logprobs ? { logprobs: ollamaLogprobs(choice?.logprobs?.content, run.logprobs.top) } : {}),
  }
}

/**
 * Runs a native chat or generate request: takes a slot (loading the model if needed), sends the request to
 * the runtime, and answers in Ollama's shapes, streamed or whole. Anything failing before the first event
 * gets a real HTTP status; after it, a last error event.
 */
export async function runNative (leases: LeaseSource, request: FastifyRequest, reply: FastifyReply, run: NativeRun): Promise<unknown> {
  checkSchemaBudget(run.body, request.server.config.limits)
  const startedNs = process.hrtime.bigint()
  const stream = run.stream ? new EventStream(request, reply, streamFormatOf(request)) : null
  const answer = await runLeased(leases, {
    model: run.model,
    options: run.options,
    keepAliveMs: run.keepAliveMs,
    log: request.log,
    usage: request.usage,
    priority: askedPriority(request.body),
    call: callContext(request),
    affinity: () => conversationAffinity(run.body),
    // As received: a surface's body may have been reshaped (Anthropic's to OpenAI's) without its session fields.
    session: sessionOf(request.headers, request.body),
    signal: stream?.signal ?? clientGone(reply),
    stream,
    ...(run.shorten ? { shorten: run.shorten } : {}),
    work: async (lease): Promise<Record<string, unknown> | undefined> => {
      const shaped = run.shape === undefined ? run : { ...run, body: await run.shape(run.body, lease) }
      return stream === null ? wholeAnswer(lease, shaped, startedNs) : streamedAnswer(lease, shaped, stream, startedNs)
    },
  })
  return answer ?? reply
}

const RUNTIME_PATHS = { chat: '/v1/chat/completions', completion: '/completion', infill: '/infill' } as const

function runtimePath (run: NativeRun): string {
  return RUNTIME_PATHS[run.endpoint]
}

function runtimeBody (lease: Lease, run: NativeRun): Record<string, unknown> {
  const api = run.endpoint === 'chat' ? 'chat' : 'completion'
  return { ...run.body, ...runtimeSampling(lease.sampling, api), ...(run.logprobs ? logprobFields(api, run.logprobs.top) : {}), stream: run.stream }
}

async function wholeAnswer (lease: Lease, run: NativeRun, startedNs: bigint): Promise<Record<string, unknown>> {
  const fragment = fragmentOf(run, await lease.endpoint.postJson(runtimePath(run), runtimeBody(lease, run), lease.signal))
  if (fragment.error) throw runtimeFailure(fragment.error)
  const calls: ToolCall[] = []
  collectToolCalls(calls, fragment.toolCalls)
  const stats = countedStats(lease, startedNs, fragment.timings)
  const text = run.kind === 'chat'
    ? { message: { role: 'assistant', content: fragment.text, ...(fragment.thinking ? { thinking: fragment.thinking } : {}), ...(calls.length > 0 ? { tool_calls: ollamaToolCalls(calls) } : {}) } }
    : { response: fragment.text, ...(fragment.thinking ? { thinking: fragment.thinking } : {}) }
  return {
    model: lease.model.name, created_at: new Date().toISOString(), ...text, done: true,
    done_reason: doneReason(fragment.finishReason), ...stats,
    ...(run.logprobs ? { logprobs: fragment.logprobs ?? [] } : {}),
  }
}

async function streamedAnswer (lease: Lease, run: NativeRun, stream: EventStream, startedNs: bigint): Promise<undefined> {
  const modelJson = JSON.stringify(lease.model.name)
  const textKey = run.kind === 'chat' ? 'message' : 'response'
  const events = await lease.endpoint.events(runtimePath(run), runtimeBody(lease, run), lease.signal)
  const calls: ToolCall[] = []
  stream.open()
  // A token an event, counted as they go: what a client that leaves early pays for (plugins/usage).
  lease.countSent(0)
  let last: Fragment = { text: EMPTY }
  for await (const event of events) {
    const fragment = fragmentOf(run, event)
    if (fragment.error) throw runtimeFailure(fragment.error)
    // llama-server's first event carries the first token.
    lease.firstToken()
    lease.countSent(1)
    collectToolCalls(calls, fragment.toolCalls)
    // A token's log probabilities ride on the event that carries its text, else on one of their own (as Ollama
    // sends those of a token its parser holds back: a tool call's, whitespace).
    let probs = fragment.logprobs !== undefined && fragment.logprobs.length > 0 ? { logprobs: fragment.logprobs } : null
    if (fragment.thinking !== undefined) {
      // Ollama's shape: reasoning in its own field, beside an empty answer fragment.
      const event = run.kind === 'chat'
        ? { model: lease.model.name, created_at: new Date().toISOString(), message: { role: 'assistant', content: '', thinking: fragment.thinking }, done: false, ...probs }
        : { model: lease.model.name, created_at: new Date().toISOString(), response: '', thinking: fragment.thinking, done: false, ...probs }
      probs = null
      if (!stream.send(event)) await stream.drained()
    }
    if (fragment.text !== EMPTY || probs !== null) {
      const text = run.kind === 'chat'
        ? `{"role":"assistant","content":${JSON.stringify(fragment.text)}}`
        : JSON.stringify(fragment.text)
      const logprobs = probs === null ? '' : `,"logprobs":${JSON.stringify(probs.logprobs)}`
      const ok = stream.sendJson(`{"model":${modelJson},"created_at":"${new Date().toISOString()}","${textKey}":${text},"done":false${logprobs}}`)
      if (!ok) await stream.drained()
    }
    if (fragment.finishReason || fragment.timings) last = fragment
  }
  if (lease.signal.aborted) throw lease.signal.reason
  if (calls.length > 0) {
    stream.send({ model: lease.model.name, created_at: new Date().toISOString(), message: { role: 'assistant', content: '', tool_calls: ollamaToolCalls(calls) }, done: false })
  }
  // The last event: SSE as rest-interface §4.1 (no message), NDJSON as Ollama (an empty message).
  const tail = run.kind === 'chat'
    ? (stream.format === 'ndjson' ? { message: { role: 'assistant', content: '' } } : {})
    : { response: '' }
  stream.send({
    model: lease.model.name, created_at: new Date().toISOString(), ...tail, done: true,
    done_reason: doneReason(last.finishReason), ...countedStats(lease, startedNs, last.timings),
  })
  stream.end()
  return undefined
}

/** Ollama's statistics of a finished answer, its token counts also told to the lease. */
function countedStats (lease: Lease, startedNs: bigint, timings: RuntimeTimings | undefined): OllamaStats {
  const stats = ollamaStats(startedNs, lease.loadDurationMs, timings)
  lease.countTokens(stats.prompt_eval_count, stats.eval_count, cachedTokens(timings))
  return stats
}

function runtimeFailure (error: unknown): RuntimeError {
  const message = typeof error === 'string' ? error : (error as { message?: string })?.message ?? JSON.stringify(error)
  return new RuntimeError(`the runtime failed: ${message}`)
}
