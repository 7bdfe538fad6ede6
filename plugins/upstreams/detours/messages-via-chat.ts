import type { UpstreamConfig } from '../upstream-config.js'
import { GatewayError, RuntimeError } from '../../../core/base/errors.js'
import { tokenCount, watchedSink, type ModelEndpoint, type RelayProgress, type RelaySink } from '../../../runtimes/index.js'
import { messageOf, type ChatAnswer } from './messages-answer.js'
import { chatRequestOf, stopSequencesOf } from './messages-request.js'
import { MessagesEvents } from './messages-stream.js'
import { sinkWriter } from './sink-writer.js'

export const MESSAGES_PATH = '/v1/messages'
export const COUNT_TOKENS_PATH = '/v1/messages/count_tokens'
const CHAT_PATH = '/v1/chat/completions'

/** How an upstream is sent Anthropic Messages requests (config.yaml's `upstreams[].messages`). */
export type MessagesMode = NonNullable<UpstreamConfig['messages']>

/** What of an endpoint the conversion uses: the upstream's chat completions. */
export type ChatEndpoint = Pick<ModelEndpoint, 'events' | 'postJson'>

/** The two Messages paths, which an upstream may lack. */
export function isMessagesPath (path: string): boolean {
  return path === MESSAGES_PATH || path === COUNT_TOKENS_PATH
}

// What runtimeErrorFrom leaves of a refusal for want of a route: its status alone where the body said nothing it
// reads (vLLM's and SGLang's `{"detail":"Not Found"}`, Ollama's `404 page not found`), or a llama-server's words.
const NO_ROUTE = /^(runtime answered 40[45]|File Not Found|Not Found|Method Not Allowed)$/

/**
 * Whether a runtime's refusal says it has no such route: a 405, or a 404 in the words above. A 404 that says more
 * ("model x not found") is about the request, not the route. The status is read from the error's
 * `details.runtimeStatus` where it carries one.
 */
export function isMissingSurface (err: unknown): boolean {
  if (!(err instanceof GatewayError) || err.code !== 'runtime_rejected') return false
  const status = err.details.runtimeStatus
  if (status === 405) return true
  return (status === undefined || status === 404) && NO_ROUTE.test(err.message)
}

/**
 * Whether Messages requests to one upstream go as they are or converted to chat completions: `native` never
 * converts, `convert` always does, `auto` sends them as they are until the upstream answers one path with 404
 * or 405 (before anything went to the client: a refusal comes before the stream opens), then converts that path
 * from then on. One per upstream (`of`), so that every model of it learns from the first refusal.
 */
export class MessagesSupport {
  private static readonly known = new WeakMap<UpstreamConfig, MessagesSupport>()
  private readonly lacking = new Set<string>()

  constructor (readonly mode: MessagesMode) {}

  /** The upstream's own, made on first use. */
  static of (upstream: UpstreamConfig): MessagesSupport {
    let support = MessagesSupport.known.get(upstream)
    if (support === undefined) MessagesSupport.known.set(upstream, support = new MessagesSupport(upstream.messages ?? 'auto'))
    return support
  }

  /** Whether a request to `path` goes converted now. */
  converts (path: string): boolean {
    return this.mode === 'convert' || (this.mode === 'auto' && this.lacking.has(path))
  }

  /**
   * Whether a request that failed natively with `err`, nothing having gone to the client, is to go converted:
   * in auto mode when the upstream lacks the path; it is then remembered.
   */
  fallsBack (path: string, err: unknown): boolean {
    if (this.mode !== 'auto' || !isMissingSurface(err)) return false
    this.lacking.add(path)
    return true
  }

  /** A whole answer from `path`: `native()`, or the same asked of the chat and converted. */
  async post (endpoint: ChatEndpoint, path: string, body: unknown, signal: AbortSignal, native: () => Promise<string>): Promise<string> {
    if (!this.converts(path)) {
      try {
        return await native()
      } catch (err) {
        if (!this.fallsBack(path, err)) throw err
      }
    }
    return postMessagesViaChat(endpoint, path, body, signal)
  }

  /** A streamed answer: `native(sink)`, or converted when the upstream lacks the path or refused it before opening `sink`. */
  async relay (endpoint: ChatEndpoint, payload: string, sink: RelaySink, progress: RelayProgress, signal: AbortSignal, native: (sink: RelaySink) => Promise<void>): Promise<void> {
    if (!this.converts(MESSAGES_PATH)) {
      const watched = watchedSink(sink)
      try {
        return await native(watched.sink)
      } catch (err) {
        if (watched.opened() || !this.fallsBack(MESSAGES_PATH, err)) throw err
      }
    }
    return relayMessagesViaChat(endpoint, payload, sink, progress, signal)
  }
}

/**
 * A streamed Messages request (`payload`, serialized) asked of the upstream's chat completions, its chunks
 * written to `sink` as Anthropic's events (messages-stream.ts). As stream-relay.ts does: the sink opens with
 * the first bytes (a refusal, or a stream that ends before its first chunk, is still thrown before that, for a
 * real status or a failover), `progress.firstData` is called then, `head` and `tail` keep the first and last
 * bytes written (the surface reads the prompt's tokens and the end from them), and a client that is backed up
 * is waited for. An error the upstream sends inside its stream is thrown; the surface ends the stream with
 * Anthropic's `event: error`.
 */
export async function relayMessagesViaChat (endpoint: ChatEndpoint, payload: string, sink: RelaySink, progress: RelayProgress, signal: AbortSignal): Promise<void> {
  const body = JSON.parse(payload) as Record<string, unknown>
  // The name the client asked for: the endpoint puts the upstream's own in what it sends.
  const events = new MessagesEvents(String(body.model ?? ''), stopSequencesOf(body))
  const chunks = await endpoint.events(CHAT_PATH, chatRequestOf({ ...body, stream: true }), signal)
  const out = sinkWriter(sink, progress)
  for await (const chunk of chunks) {
    const error = chunkError(chunk)
    if (error !== null) throw new RuntimeError(error)
    await out.write(events.push(chunk as ChatAnswer))
  }
  if (signal.aborted) throw signal.reason
  await out.write(events.end())
  out.end()
}

/**
 * A whole Messages answer, or a token count (`/v1/messages/count_tokens`), asked of the upstream's chat
 * completions; the answer is JSON text in Anthropic's shape, under the model name the client asked for.
 */
export async function postMessagesViaChat (endpoint: ChatEndpoint, path: string, body: unknown, signal: AbortSignal): Promise<string> {
  const asked = body as Record<string, unknown>
  if (path === COUNT_TOKENS_PATH) return JSON.stringify({ input_tokens: await countTokensViaChat(endpoint, asked, signal) })
  const chat = await endpoint.postJson<ChatAnswer>(CHAT_PATH, chatRequestOf({ ...asked, stream: false }), signal)
  const error = chunkError(chat)
  if (error !== null) throw new RuntimeError(error)
  return JSON.stringify(messageOf(chat, String(asked.model ?? ''), stopSequencesOf(asked)))
}

/**
 * The prompt's tokens, for an upstream with no count_tokens of its own. Chat completions has no way to count
 * without generating, and the engines' own tokenize routes differ (vLLM's takes messages, llama-server's only
 * text, Ollama has none): so the same request is asked for one token, and its `usage.prompt_tokens` read. That
 * is the count of the prompt as the upstream's template renders it, tools and system included: exact, for one
 * prompt's evaluation (which a prefix cache then keeps for the request that usually follows).
 */
async function countTokensViaChat (endpoint: ChatEndpoint, body: Record<string, unknown>, signal: AbortSignal): Promise<number> {
  const chat = await endpoint.postJson<ChatAnswer>(CHAT_PATH, { ...chatRequestOf({ ...body, stream: false }), max_tokens: 1 }, signal)
  const prompt = tokenCount(chat.usage?.prompt_tokens, 'usage.prompt_tokens')
  if (prompt === null) throw new RuntimeError('the upstream counted no prompt tokens (its chat completion has no usage.prompt_tokens), so they cannot be counted')
  return prompt
}

/** The message of an error an upstream answered instead of a completion (OpenAI's `{"error":...}`, vLLM's `{"object":"error"}`), or null. */
function chunkError (chunk: unknown): string | null {
  if (typeof chunk !== 'object' || chunk === null) return 'the upstream sent something that is not a chat completion'
  const { error, object, message } = chunk as { error?: unknown, object?: unknown, message?: unknown }
  if (object === 'error') return typeof message === 'string' ? message : 'the upstream answered an error'
  if (error === undefined || error === null) return null
  if (typeof error === 'string') return error
  const said = (error as { message?: unknown }).message
  return typeof said === 'string' ? said : JSON.stringify(error)
}
