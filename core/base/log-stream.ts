import { fstatSync } from 'node:fs'
import { destination } from 'pino'

/**
 * Standard output for the server's log, the lines of one turn of the event loop written together once the turn is
 * over: by libuv's threads, or, into a regular file, at once (stdoutIsFile). pino's default writes each line on its
 * own through a thread: a round trip between threads for every request's access-log line, several per turn when
 * streams end together. No line waits longer than the turn it was logged in (or the write before it); what is left is
 * written when the process exits, a crash included.
 */
export function batchedStdout (): { write(line: string): boolean, flush(): void } {
  // The turn's lines are gathered here, not with sonic-boom's minLength: a flush asked while a write is under way
  // does nothing there, and the lines would wait for the next log line, seconds or hours later. Without minLength,
  // what is written during a write goes out right after it.
  const out = destination({ dest: 1, sync: stdoutIsFile() })
  let lines: string[] = []
  const flush = (): void => {
    if (lines.length === 0) return
    const text = lines.join('')
    lines = []
    out.write(text)
  }
  // pino's own exit hook (sonic-boom's flushSync) may have run before this one: what was gathered goes out after it.
  process.once('exit', () => {
    flush()
    try { out.flushSync() } catch { /* stdout gone: nothing to tell it */ }
  })
  return {
    write: (line) => {
      if (lines.length === 0) setImmediate(flush)
      lines.push(line)
      return true
    },
    flush,
  }
}

/**
 * Whether standard output is a regular file (`serve > llamagate.log`, a service's log file): a write there never waits
 * on a reader, so the turn's lines go out at once on the main thread, without a round trip through libuv's threads
 * (docs/benchmarks.md, "The log's writes"). A pipe, a terminal or a socket may block: those stay asynchronous.
 */
function stdoutIsFile (): boolean {
  try {
    return fstatSync(1).isFile()
  } catch {
    return false
  }
}
