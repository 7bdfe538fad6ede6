import type { RelayProgress, RelaySink } from './stream-relay.js'

/**
 * What a lease hands a surface to run its request on: a model's server, spoken to in llama-server's paths and
 * shapes. A local llama-server's client (RuntimeEndpoint) is one; an upstream's model (plugins/upstreams) is another,
 * which makes each call in the paths that upstream has.
 */
export interface ModelEndpoint {
  /** The whole answer to a POST, as text. @throws the server's own error, as a gateway error */
  post(path: string, body: unknown, signal: AbortSignal): Promise<string>
  /** The whole answer to a POST, parsed. */
  postJson<T = unknown>(path: string, body: unknown, signal: AbortSignal): Promise<T>
  /**
   * The events of a streamed answer (the body must ask for `stream: true`), each parsed. Resolves once the status is
   * known to be good, so that a refusal is still thrown before the caller opens its own stream.
   */
  events(path: string, body: unknown, signal: AbortSignal): Promise<AsyncGenerator<unknown>>
  /** Streams the answer to a POST (`payload`: the JSON body, serialized) into `sink` as it comes (stream-relay.ts). */
  relay(path: string, payload: string, sink: RelaySink, progress: RelayProgress, signal: AbortSignal): Promise<void>
}

/**
 * `endpoint` with `fields` added to every JSON body sent through it (a request's `cache_salt`): what a lease hands its
 * surface, so that no request body can go out without them. They win over the body's own.
 */
export function withBodyFields (endpoint: ModelEndpoint, fields: Readonly<Record<string, unknown>>): ModelEndpoint {
  const added = (body: unknown): unknown => typeof body === 'object' && body !== null && !Array.isArray(body) ? { ...body, ...fields } : body
  // A serialized object gets them as its last members: a JSON parser takes the last of a repeated name.
  const members = JSON.stringify(fields).slice(1, -1)
  const appended = (payload: string): string => {
    const end = payload.lastIndexOf('}')
    if (members === '' || !payload.startsWith('{') || end === -1) return payload
    return `${payload.slice(0, end)}${/^\{\s*$/.test(payload.slice(0, end)) ? '' : ','}${members}${payload.slice(end)}`
  }
  return {
    post: (path, body, signal) => endpoint.post(path, added(body), signal),
    postJson: <T>(path: string, body: unknown, signal: AbortSignal) => endpoint.postJson<T>(path, added(body), signal),
    events: (path, body, signal) => endpoint.events(path, added(body), signal),
    relay: (path, payload, sink, progress, signal) => endpoint.relay(path, appended(payload), sink, progress, signal),
  }
}
