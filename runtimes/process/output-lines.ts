/**
 * A child's output as lines: `push` takes what stdout and stderr wrote (one log, in arrival order), `flush` hands
 * over a last line that had no newline once the child is gone.
 */
export function outputLines (onLine: (line: string) => void): { push: (chunk: string) => void, flush: () => void } {
  let pending = ''
  return {
    push (chunk) {
      const parts = (pending + chunk).split('\n')
      pending = parts.pop()!
      for (const line of parts) onLine(line)
    },
    flush () {
      if (pending) onLine(pending)
      pending = ''
    },
  }
}
