/** One event of a pull stream, as a client reads it. */
export interface PullStreamEvent { status?: string, digest?: string, total?: number, completed?: number, error?: string }

export interface PullStream {
  /** The HTTP status of the answer. */
  status: number
  /** The events read so far, growing while the stream runs. */
  events: PullStreamEvent[]
  /** Resolves with every event once the stream ends (or the client left). */
  done: Promise<PullStreamEvent[]>
}

/**
 * Starts `POST /api/pull` on `address` and reads its NDJSON lines as they come, so that a test can act in the
 * middle of a pull (when the stream says it waits, kill another process) and still check the whole stream.
 */
export async function openPullStream (address: string, model: string, signal?: AbortSignal): Promise<PullStream> {
  const res = await fetch(`${address}/api/pull`, { method: 'POST', headers: { accept: 'application/x-ndjson' }, body: JSON.stringify({ model }), ...(signal ? { signal } : {}) })
  const events: PullStreamEvent[] = []
  const done = (async () => {
    let buffer = ''
    try {
      for await (const chunk of res.body!.pipeThrough(new TextDecoderStream())) {
        buffer += chunk
        const lines = buffer.split('\n')
        buffer = lines.pop()!
        for (const line of lines) if (line.trim()) events.push(JSON.parse(line) as PullStreamEvent)
      }
    } catch (err) {
      // The test's own abort ends the read; anything else is a failure to see.
      if (!signal?.aborted) throw err
    }
    return events
  })()
  return { status: res.status, events, done }
}
