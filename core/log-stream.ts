import { destination } from 'pino'

/**
 * Standard output for the server's log, the lines of one turn of the event loop written together, by libuv's threads,
 * once the turn is over. pino's default writes each line on its own through a thread: a round trip between threads
 * for every request's access-log line, several per turn when streams end together. No line waits longer than the
 * turn it was logged in; pino writes what is left when the process exits, a crash included.
 */
export function batchedStdout (): { write(line: string): boolean, flush(): void } {
  // minLength: the lines stay in the buffer until the flush at the end of the turn (or 8 KiB of them; sonic-boom
  // takes at most its 16 KiB maxWrite).
  const out = destination({ dest: 1, sync: false, minLength: 8 << 10 })
  let flushing = false
  const flush = (): void => {
    flushing = false
    out.flush()
  }
  return {
    write: (line) => {
      if (!flushing) {
        flushing = true
        setImmediate(flush)
      }
      return out.write(line)
    },
    flush: () => { out.flush() },
  }
}
