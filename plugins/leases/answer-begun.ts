import type { ModelEndpoint, RelaySink } from '../../runtimes/index.js'

/**
 * `endpoint`, telling `begun` once when the backend first answers a call made through it: a streamed answer's head
 * (llama-server sends it as a slot takes the request, key-line.ts `Seat.begun`), a whole answer, or a failure. Until
 * then the request may still wait in the backend's own queue.
 */
export function answerWatched (endpoint: ModelEndpoint, begun: () => void): ModelEndpoint {
  let told = false
  const tell = (): void => {
    if (told) return
    told = true
    begun()
  }
  const settled = async <T>(call: Promise<T>): Promise<T> => {
    try { return await call } finally { tell() }
  }
  const opened = (sink: RelaySink): RelaySink => ({
    open: () => { tell(); sink.open() },
    chunkedSocket: () => sink.chunkedSocket(),
    writeRaw: (chunk) => sink.writeRaw(chunk),
    drained: (socket) => sink.drained(socket),
    closing: () => sink.closing?.(),
    get heldBytes () { return sink.heldBytes },
  })
  return {
    post: (path, body, signal) => settled(endpoint.post(path, body, signal)),
    postJson: <T>(path: string, body: unknown, signal: AbortSignal) => settled(endpoint.postJson<T>(path, body, signal)),
    events: (path, body, signal) => settled(endpoint.events(path, body, signal)),
    relay: (path, payload, sink, progress, signal) => settled(endpoint.relay(path, payload, opened(sink), progress, signal)),
  }
}
