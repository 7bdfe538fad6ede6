import ora from 'ora'
import { AnswerPrinter, answerStats, type ChatEvent } from './answer-printer.js'
import type { ChatState, Message } from './chat-commands.js'
import type { GatewayClient } from '../../platform/gateway-client.js'

/** A spinner on a terminal, nothing elsewhere; stopping it twice is harmless. */
export function spinner (stream: NodeJS.WriteStream, text = ''): { stop: () => void } {
  if (!stream.isTTY) return { stop: () => {} }
  // discardStdin off: ora would put the terminal in raw mode and take Ctrl-C from us.
  const spin = ora({ stream, text, discardStdin: false }).start()
  return { stop: () => { if (spin.isSpinning) spin.stop() } }
}

/** POST /api/chat's body for `messages` with the chat's settings. */
function chatBody (state: ChatState, messages: Message[]): Record<string, unknown> {
  return {
    model: state.model,
    messages,
    stream: true,
    ...(Object.keys(state.options).length > 0 ? { options: state.options } : {}),
    ...(state.think !== undefined ? { think: state.think } : {}),
    ...(state.format !== undefined ? { format: state.format } : {}),
    ...(state.keepAlive !== undefined ? { keep_alive: state.keepAlive } : {}),
  }
}

export interface TurnIo {
  client: GatewayClient
  stdout: NodeJS.WriteStream
  stderr: NodeJS.WriteStream
}

/**
 * Asks the model and prints its answer as it streams, with a spinner until the first word shows. `newlines`
 * ends the answer (see AnswerPrinter.end), also when it is cut by an error or by `signal`, whose abort ends the
 * request (the server then stops generating). Returns the answer; throws what the stream throws.
 */
export async function streamAnswer (io: TurnIo, state: ChatState, messages: Message[], newlines: number, signal?: AbortSignal): Promise<string> {
  const spin = spinner(io.stderr)
  const printer = new AnswerPrinter(io.stdout, {
    hideThinking: state.hideThinking,
    color: io.stdout.isTTY === true && !process.env.NO_COLOR,
    onOutput: spin.stop,
  })
  let last: ChatEvent | undefined
  try {
    for await (const event of io.client.stream<ChatEvent>('/api/chat', chatBody(state, messages), signal)) {
      printer.push(event)
      if (event.done) last = event
    }
  } finally {
    spin.stop()
    printer.end(newlines)
    // Stopped before a word came: the terminal echoed ^C on the line, and the next prompt needs one of its own.
    if (signal?.aborted && !printer.wrote) io.stdout.write('\n')
  }
  if (state.verbose && last) io.stderr.write(answerStats(last))
  return printer.content
}

/** Loads the model with the chat's options, as Ollama's chat form with no messages does; nothing is generated. */
export async function loadModel (io: TurnIo, state: ChatState, signal?: AbortSignal): Promise<void> {
  await io.client.json('POST', '/api/chat', {
    model: state.model,
    messages: [],
    ...(Object.keys(state.options).length > 0 ? { options: state.options } : {}),
    ...(state.keepAlive !== undefined ? { keep_alive: state.keepAlive } : {}),
  }, signal)
}
