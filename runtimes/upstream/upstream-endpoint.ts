import type { UpstreamConfig } from '../../plugins/upstreams/upstream-config.js'
import { RuntimeEndpoint } from '../endpoint/runtime-endpoint.js'
import type { RelayProgress, RelaySink } from '../endpoint/stream-relay.js'
import { answerLines } from './answer-lines.js'
import { chatWithTimings } from './chat-detours.js'
import { completionViaGenerate, completionViaText, isPlainCompletion, textCompletionViaGenerate } from './completion-detours.js'
import type { Detour, UpstreamCalls } from './detour.js'
import { embeddingsViaNative, isTextEmbedding } from './embedding-detours.js'
import { isMessagesPath, MESSAGES_PATH, MessagesSupport } from './messages-via-chat.js'
import { sinkWriter } from './sink-writer.js'

type Body = Record<string, unknown>

/** Paths whose relay never takes a detour (see `detour`): a chat's stream is relayed as the upstream sends it. */
const RELAYED_AS_ASKED = new Set(['/v1/chat/completions'])

/**
 * The endpoint that speaks to one model of an upstream as to a local runtime: its URL (and path), its own key as
 * a Bearer token, the model's own name in every body, and as many kept connections as it may take requests.
 * Its errors are the gateway's runtime errors, with the key cut out of any message. The surfaces speak to it in
 * llama-server's paths; where an upstream lacks one of them, the call is made in a path it has and its answer
 * reshaped here (`detour`, one case per path).
 */
export class UpstreamEndpoint extends RuntimeEndpoint {
  /** The upstream's own paths, for the detours. */
  private readonly calls: UpstreamCalls
  /** Whether Anthropic Messages go to it as they are or as chat completions (config's `upstreams[].messages`). */
  private readonly messages: MessagesSupport

  constructor (readonly upstream: UpstreamConfig, readonly remoteModel: string) {
    super({
      name: `${remoteModel} (upstream ${upstream.name})`,
      address: { baseUrl: upstream.url, socketPath: null },
      slots: upstream.maxConcurrent,
      ...(upstream.key !== null ? { headers: { authorization: `Bearer ${upstream.key}` } } : {}),
      model: remoteModel,
      // Unlike llama-server, engines keep a connection after a streamed answer: the next stream skips the connect
      // (and an https upstream's handshake).
      keepStreams: true,
      // Answers say the name the client asked for (the prefix's), as a local model's do.
      servedAs: upstream.prefix + remoteModel,
      // Another server's answers are read within config.yaml's limits, and its key is cut out of all of them.
      limits: upstream.limits,
    })
    this.calls = {
      // The base class's calls as they are: never back through this class's detours.
      json: async (path, body, signal) => JSON.parse(await super.post(path, body, signal)) as unknown,
      events: async (path, body, signal) => answerLines(await this.request(path, body, signal), this.splitLimits, this.redaction),
    }
    this.messages = MessagesSupport.of(upstream)
  }

  override async post (path: string, body: unknown, signal: AbortSignal): Promise<string> {
    if (isMessagesPath(path)) return this.messages.post(this, path, body, signal, () => super.post(path, body, signal))
    const detour = this.detour(path, body, signal)
    return detour === null ? super.post(path, body, signal) : JSON.stringify(await detour.whole())
  }

  override async postJson<T = unknown> (path: string, body: unknown, signal: AbortSignal): Promise<T> {
    const detour = this.detour(path, body, signal)
    return detour === null ? super.postJson<T>(path, body, signal) : await detour.whole() as T
  }

  override async events (path: string, body: unknown, signal: AbortSignal): Promise<AsyncGenerator<unknown>> {
    const detour = this.detour(path, body, signal)
    return detour?.events === undefined ? super.events(path, body, signal) : detour.events()
  }

  override async relay (path: string, payload: string, sink: RelaySink, progress: RelayProgress, signal: AbortSignal): Promise<void> {
    if (path === MESSAGES_PATH) return this.messages.relay(this, payload, sink, progress, signal, (watched) => super.relay(path, payload, watched, progress, signal))
    // The hot path, chat completions, goes as asked without its payload parsed here.
    const detour = RELAYED_AS_ASKED.has(path) ? null : this.detour(path, JSON.parse(payload), signal)
    if (detour?.sse === undefined) return super.relay(path, payload, sink, progress, signal)
    const out = sinkWriter(sink, progress)
    for await (const event of await detour.sse()) await out.write(event)
    out.end()
  }

  /**
   * How a call in one of llama-server's paths is made to this upstream: null where it has the path (it goes as asked).
   * `kind` says what it has: another llamagate (/api and llama-server's OpenAI-compatible /v1 paths, not
   * /completion nor /tokenize), Ollama (its /api, and /v1 paths of its own making), an OpenAI-compatible engine (vLLM,
   * SGLang, a bare llama-server: its /v1 paths; only the last has llama-server's own).
   */
  private detour (path: string, body: unknown, signal: AbortSignal): Detour | null {
    if (typeof body !== 'object' || body === null) return null
    const asked = body as Body
    const { kind } = this.upstream
    switch (path) {
      case '/completion':
        return kind === 'ollama' ? completionViaGenerate(this.calls, asked, signal) : completionViaText(this.calls, asked, signal, kind)
      case '/v1/completions':
        return kind === 'ollama' && isPlainCompletion(asked) ? textCompletionViaGenerate(this.calls, asked, signal) : null
      case '/v1/chat/completions':
        // A llamagate answers in llama-server's own shapes, timings included.
        return kind === 'llamagate' ? null : chatWithTimings(this.calls, asked, signal)
      case '/v1/embeddings':
        return kind !== 'openai' && isTextEmbedding(asked) ? embeddingsViaNative(this.calls, asked, signal) : null
      default:
        return null
    }
  }
}

export function upstreamEndpoint (u: UpstreamConfig, remoteModel: string): RuntimeEndpoint {
  return new UpstreamEndpoint(u, remoteModel)
}
