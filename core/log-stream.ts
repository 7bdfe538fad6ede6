import { destination } from 'pino'

/** How long a log line may wait to be written with others. */
const FLUSH_MS = 100

/**
 * Standard output for the server's log, its lines gathered for up to FLUSH_MS (or 4 KiB) and written by libuv's
 * threads. pino's default writes each line on its own, through a thread: a round trip between threads for every
 * request's access-log line. pino writes what is left when the process exits, a crash included; only a kill -9
 * loses the lines gathered in its last FLUSH_MS.
 */
export function batchedStdout (): { write(line: string): boolean, flush(): void } {
  const out = destination({ dest: 1, sync: false, minLength: 4096 })
  let gathered = false
  setInterval(() => {
    if (!gathered) return
    gathered = false
    out.flush()
  }, FLUSH_MS).unref()
  return {
    write: (line) => { gathered = true; return out.write(line) },
    flush: () => { out.flush() },
  }
}
