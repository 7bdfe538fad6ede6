import type { UpstreamConfig } from './upstream-config.js'
import type { ModelEndpoint, RelayProgress, RelaySink } from '../../runtimes/index.js'
import { chatWithTimings } from './detours/chat-detours.js'
import { completionViaGenerate, completionViaText, isPlainCompletion, textCompletionViaGenerate } from './detours/completion-detours.js'
import type { Detour, UpstreamCalls } from './detours/detour.js'
import { embeddingsViaNative, isTextEmbedding } from './detours/embedding-detours.js'
import { isMessagesPath, MESSAGES_PATH, MessagesSupport } from './detours/messages-via-chat.js'
import { sinkWriter } from './detours/sink-writer.js'
import { UpstreamModelClient } from './upstream-model-client.js'

type Body = Record<string, unknown>

/** How an endpoint reaches one model in the upstream's own paths: over HTTP (UpstreamModelClient), or a plugin's backend (BackendClient). */
export type UpstreamClient = Pick<UpstreamModelClient, 'name' | 'post' | 'postJson' | 'events' | 'lines' | 'relay' | 'close'>

/** Paths whose relay never takes a detour (see `detour`): a chat's stream is relayed as the upstream sends it. */
const RELAYED_AS_ASKED = new Set(['/v1/chat/completions'])

/**
 * One model of an upstream as a lease hands it to a surface: spoken to in llama-server's paths, as a local runtime
 * is (a ModelEndpoint). Its client (upstream-model-client.ts) makes the calls in the upstream's own paths; where an
 * upstream lacks one of llama-server's, the call is made in a path it has and its answer reshaped here (`detour`,
 * one case per path; Anthropic Messages through chat completions, `MessagesSupport`). Its errors are the gateway's
 * runtime errors, with the key cut out of any message.
 */
export class UpstreamEndpoint implements ModelEndpoint {
  /** For messages: "<model> (upstream <name>)". */
  readonly name: string
  private readonly client: UpstreamClient
  /** The upstream's own paths, for the detours: never back through this class's detours. */
  private readonly calls: UpstreamCalls
  /** Whether Anthropic Messages go to it as they are or as chat completions (config's `upstreams[].messages`). */
  private readonly messages: MessagesSupport

  constructor (readonly upstream: UpstreamConfig, readonly remoteModel: string, client: UpstreamClient = new UpstreamModelClient(upstream, remoteModel)) {
    this.client = client
    this.name = client.name
    this.calls = {
      json: (path, body, signal) => client.postJson(path, body, signal),
      events: (path, body, signal) => client.lines(path, body, signal),
    }
    this.messages = MessagesSupport.of(upstream)
  }

  async post (path: string, body: unknown, signal: AbortSignal): Promise<string> {
    if (isMessagesPath(path)) return this.messages.post(this, path, body, signal, () => this.client.post(path, body, signal))
    const detour = this.detour(path, body, signal)
    return detour === null ? this.client.post(path, body, signal) : JSON.stringify(await detour.whole())
  }

  async postJson<T = unknown> (path: string, body: unknown, signal: AbortSignal): Promise<T> {
    const detour = this.detour(path, body, signal)
    return detour === null ? this.client.postJson<T>(path, body, signal) : await detour.whole() as T
  }

  async events (path: string, body: unknown, signal: AbortSignal): Promise<AsyncGenerator<unknown>> {
    const detour = this.detour(path, body, signal)
    return detour?.events === undefined ? this.client.events(path, body, signal) : detour.events()
  }

  async relay (path: string, payload: string, sink: RelaySink, progress: RelayProgress, signal: AbortSignal): Promise<void> {
    if (path === MESSAGES_PATH) return this.messages.relay(this, payload, sink, progress, signal, (watched) => this.client.relay(path, payload, watched, progress, signal))
    // The hot path, chat completions, goes as asked without its payload parsed here.
    const detour = RELAYED_AS_ASKED.has(path) ? null : this.detour(path, JSON.parse(payload), signal)
    if (detour?.sse === undefined) return this.client.relay(path, payload, sink, progress, signal)
    const out = sinkWriter(sink, progress)
    for await (const event of await detour.sse()) await out.write(event)
    out.end()
  }

  /** Closes its client's connections. */
  close (): Promise<void> {
    return this.client.close()
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

export function upstreamEndpoint (u: UpstreamConfig, remoteModel: string): UpstreamEndpoint {
  return new UpstreamEndpoint(u, remoteModel)
}
