import { formatDuration } from './human.js'

/** One event of POST /api/chat's NDJSON stream; the last has `done: true` and the statistics. */
export interface ChatEvent {
  message?: { role?: string, content?: string, thinking?: string }
  done?: boolean
  done_reason?: string
  total_duration?: number
  load_duration?: number
  prompt_eval_count?: number
  prompt_eval_duration?: number
  eval_count?: number
  eval_duration?: number
}

// Ollama's colours for thinking: grey, its header and footer bold.
const GREY = '\x1b[38;5;245m'
const BOLD = '\x1b[1m'
const RESET = '\x1b[0m'

export interface PrinterOptions {
  /** Thinking is read but not shown (Ollama's --hidethinking). */
  hideThinking: boolean
  /** Escape codes for the thinking block; off for pipes and files. */
  color: boolean
  /** Called once, before the first character is written: the spinner must be gone by then. */
  onOutput?: () => void
}

/**
 * Writes a streamed answer as it comes, thinking apart from it as `ollama run` shows it: a "Thinking..." line, the
 * reasoning (grey on a terminal), "...done thinking." and a blank line, then the answer.
 */
export class AnswerPrinter {
  /** The answer so far, without the thinking. */
  content = ''
  private thinkingOpen = false
  private started = false
  private endsWithNewline = true

  constructor (private readonly out: NodeJS.WritableStream, private readonly options: PrinterOptions) {}

  push (event: ChatEvent): void {
    const thinking = event.message?.thinking ?? ''
    const content = event.message?.content ?? ''
    if (thinking !== '' && !this.options.hideThinking) {
      if (!this.thinkingOpen) {
        this.write(this.paint(`${BOLD}Thinking...\n${RESET}${GREY}`, 'Thinking...\n'))
        this.thinkingOpen = true
      }
      this.write(thinking)
    }
    if (content !== '') {
      this.closeThinking(true)
      this.content += content
      this.write(content)
    }
  }

  /** Whether anything was written yet. */
  get wrote (): boolean {
    return this.started
  }

  /**
   * Ends the answer, whole or cut: an open thinking block gets its colour back, the last line is ended, and
   * `newlines - 1` blank lines follow (Ollama leaves one after an answer in a chat).
   */
  end (newlines: number): void {
    this.closeThinking(false)
    if (!this.wrote) return
    this.write(`${this.endsWithNewline ? '' : '\n'}${'\n'.repeat(newlines - 1)}`)
  }

  /** The footer when the answer follows; when the stream ends mid-thought, only the colour is put back. */
  private closeThinking (answerFollows: boolean): void {
    if (!this.thinkingOpen) return
    this.thinkingOpen = false
    if (!answerFollows) {
      this.write(this.paint(RESET, ''))
      return
    }
    const newline = this.endsWithNewline ? '' : '\n'
    this.write(this.paint(`${newline}${BOLD}...done thinking.\n\n${RESET}`, `${newline}...done thinking.\n\n`))
  }

  private paint (colored: string, plain: string): string {
    return this.options.color ? colored : plain
  }

  private write (text: string): void {
    if (text === '') return
    if (!this.started) {
      this.started = true
      this.options.onOutput?.()
    }
    this.out.write(text)
    // Escape codes do not move the cursor: what counts is the last printed character.
    const printed = text.replace(/\x1b\[[0-9;]*m/g, '')
    if (printed !== '') this.endsWithNewline = printed.endsWith('\n')
  }
}

/** `ollama run --verbose`'s statistics of an answer, from its last event. */
export function answerStats (last: ChatEvent): string {
  const ms = (ns: number | undefined): number => (ns ?? 0) / 1e6
  const rate = (count: number | undefined, ns: number | undefined): string =>
    ns ? `${((count ?? 0) / (ns / 1e9)).toFixed(2)} tokens/s` : 'n/a'
  return [
    `total duration:       ${formatDuration(ms(last.total_duration))}`,
    `load duration:        ${formatDuration(ms(last.load_duration))}`,
    `prompt eval count:    ${last.prompt_eval_count ?? 0} token(s)`,
    `prompt eval duration: ${formatDuration(ms(last.prompt_eval_duration))}`,
    `prompt eval rate:     ${rate(last.prompt_eval_count, last.prompt_eval_duration)}`,
    `eval count:           ${last.eval_count ?? 0} token(s)`,
    `eval duration:        ${formatDuration(ms(last.eval_duration))}`,
    `eval rate:            ${rate(last.eval_count, last.eval_duration)}`,
  ].join('\n') + '\n'
}
