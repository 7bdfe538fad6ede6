import type { RelayProgress, RelaySink } from '../../runtimes/index.js'
import { endsAnswer, sseEvent, streamEnd } from './answer-pieces.js'

const EMPTY = Buffer.alloc(0)

/**
 * A relay (runtimes/endpoint/stream-relay.ts's contract: the sink, the progress it keeps) made of parsed events
 * written again: where call hooks read or rewrite a passed-through stream's pieces (hooked-call.ts). The surface's
 * own rewrite applies after, as on the byte relay; `tail` and `head` keep the events as they were written.
 */
export async function relayEvents (path: string, events: AsyncGenerator<Record<string, any>>, sink: RelaySink, progress: RelayProgress): Promise<void> {
  sink.open()
  let first = true
  let finished = false
  // The last events written, enough of them for `tail`: made into it once, at the end (or on a failure).
  let recent: Buffer[] = [progress.tail]
  let recentBytes = progress.tail.length
  const write = async (bytes: Buffer, count: number): Promise<void> => {
    recent.push(bytes)
    recentBytes += bytes.length
    if (recentBytes - recent[0]!.length >= progress.tailBytes) recentBytes -= recent.shift()!.length
    const headBytes = progress.headBytes ?? 0
    if (headBytes > 0 && (progress.head?.length ?? 0) < headBytes) progress.head = Buffer.concat([progress.head ?? EMPTY, bytes]).subarray(0, headBytes)
    const out = progress.rewrite === undefined ? bytes : progress.rewrite.push(bytes) ?? bytes
    if (first) {
      first = false
      progress.firstData?.()
    }
    progress.onEvents?.(count)
    if (out.length > 0 && !sink.writeRaw(out)) await sink.drained()
  }
  try {
    for await (const event of events) {
      if (endsAnswer(path, event)) finished = true
      await write(Buffer.from(sseEvent(path, event)), 1)
    }
    const end = finished ? streamEnd(path) : ''
    if (end !== '') await write(Buffer.from(end), 1)
  } finally {
    progress.tail = Buffer.concat(recent).subarray(-progress.tailBytes)
    recent = []
  }
  const rest = progress.rewrite?.end()
  if (rest !== undefined && rest.length > 0) sink.writeRaw(rest)
}
