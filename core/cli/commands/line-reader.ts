import { createInterface } from 'node:readline'

export type ReadResult =
  | { kind: 'line', text: string }
  /** Ctrl-C, with what the line held. */
  | { kind: 'interrupt', text: string }
  /** Ctrl-D on an empty line. */
  | { kind: 'eof' }

const GREY = '\x1b[38;5;245m'
const RESET = '\x1b[0m'

/**
 * Reads lines from a terminal with node:readline's editing and history (Up, Down, Ctrl-A/E/K/U/W ...).
 *
 * Each line gets an interface of its own, closed once the line is in: the terminal is in raw mode only while a
 * line is typed, as in `ollama run`. While the model answers it is back in its ordinary mode, so that Ctrl-C is
 * the SIGINT signal the chat stops the answer with, and readline sees no keys meant for nobody.
 */
export class LineReader {
  /** Most recent first, as readline keeps it; carried from one interface to the next. */
  private history: string[] = []

  constructor (private readonly input: NodeJS.ReadStream, private readonly output: NodeJS.WriteStream) {}

  /** Shows `prompt` (and `placeholder`, grey, until the first key) and reads one line. */
  read (prompt: string, placeholder?: string): Promise<ReadResult> {
    const rl = createInterface({
      input: this.input, output: this.output, terminal: true, prompt, history: this.history, historySize: 1000, removeHistoryDuplicates: true,
    })
    return new Promise((resolve) => {
      let settled = false
      const clearPlaceholder = (): void => { this.output.write('\x1b[K') }
      const settle = (result: ReadResult): void => {
        if (settled) return
        settled = true
        this.input.removeListener('keypress', clearPlaceholder)
        rl.close()
        resolve(result)
      }
      rl.on('history', (history: string[]) => { this.history = history })
      rl.on('line', (text) => settle({ kind: 'line', text }))
      rl.on('SIGINT', () => settle({ kind: 'interrupt', text: rl.line }))
      rl.on('close', () => settle({ kind: 'eof' }))
      rl.prompt()
      if (placeholder !== undefined && (this.output.columns ?? 0) > prompt.length + placeholder.length) {
        // Written after the cursor and stepped back over; the first key clears it, before readline draws that key.
        this.output.write(`${GREY}${placeholder}${RESET}\x1b[${placeholder.length}D`)
        this.input.prependOnceListener('keypress', clearPlaceholder)
      }
    })
  }
}
