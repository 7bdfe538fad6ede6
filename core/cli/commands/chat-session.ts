import { runSlashCommand, type ChatState, type Message } from './chat-commands.js'
import { loadModel, spinner, streamAnswer, type TurnIo } from './chat-turn.js'
import { ServerError, ServerUnreachableError } from '../../platform/gateway-client.js'
import { LineReader } from './line-reader.js'

const PROMPT = '>>> '
const MORE = '... '
const PLACEHOLDER = 'Send a message (/? for help)'
const FENCE = '"""'

/**
 * `ollama run`'s chat in a terminal: loads the model behind a spinner, then reads questions at `>>> ` and streams
 * each answer, keeping the conversation. Ctrl-C stops an answer (that question and its partial answer are
 * forgotten: the next question follows the last whole exchange), Ctrl-C at the prompt only says how to leave,
 * Ctrl-D or /bye leaves. Returns the exit code.
 */
export async function chatSession (io: TurnIo & { stdin: NodeJS.ReadStream }, state: ChatState): Promise<number> {
  // While the model loads or answers the terminal is in its ordinary mode, where Ctrl-C is a signal: it stops
  // whatever is under way (nothing at other times), never the process.
  let current: AbortController | undefined
  const interrupt = (): void => { current?.abort() }
  process.on('SIGINT', interrupt)
  try {
    current = new AbortController()
    const spin = spinner(io.stderr, `loading ${state.model}`)
    try {
      await loadModel(io, state, current.signal)
    } catch (err) {
      if (current.signal.aborted) return 130
      throw err
    } finally {
      spin.stop()
      current = undefined
    }
    const reader = new LineReader(io.stdin, io.stdout)
    /** The lines of a `"""` message (or `/set system """`) so far, while one is open. */
    let open: { lines: string[], system: boolean } | undefined
    for (;;) {
      const read = await reader.read(open ? MORE : PROMPT, open ? undefined : PLACEHOLDER)
      if (read.kind === 'eof') {
        io.stdout.write('\n')
        return 0
      }
      if (read.kind === 'interrupt') {
        io.stdout.write(read.text === '' && !open ? '\nUse Ctrl + d or /bye to exit.\n' : '\n')
        open = undefined
        continue
      }
      let text = read.text
      if (open) {
        const closed = text.endsWith(FENCE)
        open.lines.push(closed ? text.slice(0, -FENCE.length) : text)
        if (!closed) continue
        text = open.lines.join('\n').replace(/^\n/, '')
        const system = open.system
        open = undefined
        if (system) {
          state.system = text
          io.stdout.write('Set system message.\n')
          continue
        }
      } else if (text.startsWith(FENCE)) {
        const rest = text.slice(FENCE.length)
        if (!rest.endsWith(FENCE)) {
          open = { lines: [rest], system: false }
          continue
        }
        text = rest.slice(0, -FENCE.length)
      } else if (text.startsWith('/')) {
        const result = await reported(io, () => runSlashCommand(text, state, { out: io.stdout, client: io.client }))
        if (result?.kind === 'exit') return 0
        if (result?.kind === 'system-lines') open = { lines: [result.first], system: true }
        continue
      }
      if (text === '') continue
      current = new AbortController()
      await ask(io, state, text, current.signal)
      current = undefined
    }
  } finally {
    process.removeListener('SIGINT', interrupt)
  }
}

/** One question and its answer; a whole exchange joins the conversation, a stopped or failed one does not. */
async function ask (io: TurnIo, state: ChatState, text: string, signal: AbortSignal): Promise<void> {
  const question: Message = { role: 'user', content: text }
  const messages: Message[] = [...(state.system !== undefined ? [{ role: 'system' as const, content: state.system }] : []), ...state.history, question]
  await reported(io, async () => {
    try {
      const answer = await streamAnswer(io, state, messages, 2, signal)
      state.history.push(question, { role: 'assistant', content: answer })
    } catch (err) {
      if (!signal.aborted) throw err
    }
  })
}

/** Runs `work`; an error from the server is one line and the chat goes on (the model may be stopped, say). */
async function reported<T> (io: TurnIo, work: () => Promise<T>): Promise<T | undefined> {
  try {
    return await work()
  } catch (err) {
    if (!(err instanceof ServerError || err instanceof ServerUnreachableError)) throw err
    io.stderr.write(`error: ${err.message}\n\n`)
    return undefined
  }
}
