import type { RelayProgress, RelaySink } from '../../../runtimes/index.js'

/** Writes text made here (a reshaped stream's events) into a relay's sink, as stream-relay.ts writes a runtime's bytes. */
export interface SinkWriter {
  /** Writes one whole event; waits while the client is backed up. */
  write (text: string): Promise<void>
  /** The stream ended: a sink nothing was written to is opened now, so that the client still gets its answer's head. */
  end (): void
}

/**
 * The sink opens with the first bytes, so that a refusal, or a stream that ends before its first event, is still
 * thrown before it (a real status, or a failover); `progress.firstData` is called then, and `head` and `tail` keep
 * the first and last bytes written (the surface reads the prompt's tokens and how the stream ended from them).
 */
export function sinkWriter (sink: RelaySink, progress: RelayProgress): SinkWriter {
  let opened = false
  const open = (): void => {
    if (opened) return
    opened = true
    sink.open()
  }
  return {
    async write (text) {
      if (text === '') return
      const bytes = Buffer.from(text)
      if (!opened) {
        open()
        progress.firstData?.()
      }
      const wanted = (progress.headBytes ?? 0) - (progress.head?.length ?? 0)
      if (wanted > 0) progress.head = Buffer.concat([progress.head ?? Buffer.alloc(0), bytes.subarray(0, wanted)])
      progress.tail = Buffer.concat([progress.tail, bytes]).subarray(-progress.tailBytes)
      if (!sink.writeRaw(bytes)) await sink.drained()
    },
    end: open,
  }
}
