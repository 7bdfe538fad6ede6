import type { GatewayClient } from '../../platform/gateway-client.js'
import { describe } from './show.js'

/** Ollama's `think`: on, off, or an effort. */
export type Think = boolean | 'low' | 'medium' | 'high' | 'max'
const THINK_LEVELS = ['low', 'medium', 'high', 'max'] as const

export interface Message { role: 'system' | 'user' | 'assistant', content: string }

/** What a chat remembers between questions, and what the slash commands change. */
export interface ChatState {
  model: string
  /** Sent first with every question; `/clear` keeps it, as Ollama does. */
  system: string | undefined
  /** The questions and answers so far. */
  history: Message[]
  /** `/set parameter`'s and `--parameter`'s options, sent with every question. */
  options: Record<string, unknown>
  think: Think | undefined
  hideThinking: boolean
  /** `"json"` or a JSON schema. */
  format: unknown
  keepAlive: string | undefined
  verbose: boolean
}

/** A value a person gave for a parameter, refused with the reason. */
export class ParameterError extends Error {
  override name = 'ParameterError'
}

/**
 * A model parameter from text, as `/set parameter <name> <value>...` gives it: `stop` takes every value as a
 * stop word, other names one number, `true`/`false` or word, checked against the server's own schema so that a
 * mistake is refused here, before anything is sent. (The schema is loaded on first use: the other commands
 * start without it.)
 * @throws ParameterError naming the parameter and what it takes
 */
export async function parseParameter (name: string, values: string[]): Promise<unknown> {
  const [{ Value }, { KNOWN_OPTIONS, OptionsSchema }] = await Promise.all([import('typebox/value'), import('../../config/options-schema.js')])
  if (!KNOWN_OPTIONS.includes(name)) {
    throw new ParameterError(`unknown parameter "${name}"; known: ${KNOWN_OPTIONS.join(', ')}`)
  }
  if (values.length === 0) throw new ParameterError(`"${name}" needs a value`)
  let value: unknown
  if (name === 'stop') {
    value = values
  } else {
    if (values.length > 1) throw new ParameterError(`"${name}" takes one value, got ${values.length}: ${values.join(' ')}`)
    value = scalar(values[0]!)
  }
  const errors = [...Value.Errors(OptionsSchema, { [name]: value })]
  if (errors.length > 0) throw new ParameterError(`"${values.join(' ')}" is not a valid ${name}: ${errors.map((e) => e.message).join(' or ')}`)
  return value
}

function scalar (text: string): unknown {
  if (text === 'true') return true
  if (text === 'false') return false
  if (/^-?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(text)) return Number(text)
  return text
}

/** `--think`'s and `/set think`'s words; undefined when the text is none of them. */
export function parseThink (text: string): Think | undefined {
  if (text === '' || text === 'true') return true
  if (text === 'false') return false
  return (THINK_LEVELS as readonly string[]).includes(text) ? text as Think : undefined
}

/** What the chat loop does after a slash command. */
export type SlashResult =
  | { kind: 'done' }
  | { kind: 'exit' }
  /** `/set system """...`: the lines that follow, up to the closing `"""`, are the system message. */
  | { kind: 'system-lines', first: string }

export interface SlashIo {
  out: NodeJS.WritableStream
  client: GatewayClient
}

const DONE: SlashResult = { kind: 'done' }

/**
 * Runs one of the chat's slash commands, as `ollama run` names and words them. A command that needs the
 * server may throw its ServerError; the chat loop reports it and goes on.
 */
export async function runSlashCommand (line: string, state: ChatState, io: SlashIo): Promise<SlashResult> {
  const [command = '', ...args] = line.trim().split(/\s+/)
  const say = (text: string): void => { io.out.write(`${text}\n`) }
  switch (command) {
    case '/bye': case '/exit':
      return { kind: 'exit' }
    case '/clear':
      state.history = []
      say('Cleared session context')
      return DONE
    case '/?': case '/help':
      say(args[0] === 'set' || args[0] === '/set' ? SET_HELP : args[0] === 'show' || args[0] === '/show' ? SHOW_HELP : args[0]?.startsWith('shortcut') ? SHORTCUTS_HELP : HELP)
      return DONE
    case '/set':
      return setCommand(line, args, state, say)
    case '/show':
      await showCommand(args[0], state, io, say)
      return DONE
    default:
      say(`Unknown command '${command}'. Type /? for help`)
      return DONE
  }
}

async function setCommand (line: string, args: string[], state: ChatState, say: (text: string) => void): Promise<SlashResult> {
  const [what, ...rest] = args
  switch (what) {
    case 'parameter': {
      const [name, ...values] = rest
      if (name === undefined || values.length === 0) {
        say(PARAMETER_HELP)
        return DONE
      }
      try {
        state.options[name] = await parseParameter(name, values)
        say(`Set parameter '${name}' to '${values.join(', ')}'`)
      } catch (err) {
        if (!(err instanceof ParameterError)) throw err
        say(`Couldn't set parameter: ${err.message}`)
      }
      return DONE
    }
    case 'system': {
      // The text as typed after "/set system", spaces and all.
      let text = line.trim().replace(/^\/set\s+system\s*/, '')
      if (text === '') {
        say(SET_HELP)
        return DONE
      }
      if (text.startsWith('"""')) {
        text = text.slice(3)
        if (!text.endsWith('"""')) return { kind: 'system-lines', first: text }
        text = text.slice(0, -3)
      }
      state.system = text
      say('Set system message.')
      return DONE
    }
    case 'think': {
      const think = parseThink(rest[0] ?? '')
      if (think === undefined) {
        say(`Unknown think level '${rest[0]}': use /set think, /set think low|medium|high|max, or /set nothink`)
        return DONE
      }
      state.think = think
      say(rest[0] === undefined ? 'Set \'think\' mode.' : `Set 'think' mode to '${rest[0]}'.`)
      return DONE
    }
    case 'nothink':
      state.think = false
      say('Set \'nothink\' mode.')
      return DONE
    case 'format':
      if (rest[0] !== 'json') {
        say('Invalid or missing format. For \'json\' mode use \'/set format json\'')
        return DONE
      }
      state.format = 'json'
      say('Set format to \'json\' mode.')
      return DONE
    case 'noformat':
      state.format = undefined
      say('Disabled format.')
      return DONE
    case 'verbose':
      state.verbose = true
      say('Set \'verbose\' mode.')
      return DONE
    case 'quiet':
      state.verbose = false
      say('Set \'quiet\' mode.')
      return DONE
    case undefined:
      say(SET_HELP)
      return DONE
    default:
      say(`Unknown command '/set ${what}'. Type /? for help`)
      return DONE
  }
}

type ShowReply = Parameters<typeof describe>[0]

async function showCommand (what: string | undefined, state: ChatState, io: SlashIo, say: (text: string) => void): Promise<void> {
  if (what === undefined) {
    say(SHOW_HELP)
    return
  }
  if (!['info', 'parameters', 'system', 'template'].includes(what)) {
    say(`Unknown command '/show ${what}'. Type /? for help`)
    return
  }
  const reply = await io.client.json<ShowReply>('POST', '/api/show', { model: state.model })
  switch (what) {
    case 'info':
      io.out.write(describe(reply))
      break
    case 'parameters': {
      say('Model defined parameters:')
      say(reply.parameters ? reply.parameters.split('\n').map((l) => `  ${l}`).join('\n') : '  No additional parameters were specified for this model.')
      const mine = Object.entries(state.options)
      if (mine.length > 0) say(`\nUser defined parameters:\n${mine.map(([k, v]) => `  ${k.padEnd(30)} ${JSON.stringify(v)}`).join('\n')}`)
      break
    }
    case 'system':
      say(state.system ?? reply.system ?? 'No system message was specified for this model.')
      break
    case 'template':
      say(reply.template || 'No prompt template was specified for this model.')
      break
  }
}

const HELP = `Available Commands:
  /set            Set session variables
  /show           Show model information
  /clear          Clear session context
  /bye            Exit
  /?, /help       Help for a command
  /? shortcuts    Help for keyboard shortcuts

Use """ to begin a multi-line message.
`

const SET_HELP = `Available Commands:
  /set parameter ...     Set a parameter
  /set system <string>   Set system message
  /set think [level]     Enable thinking (low, medium, high, max)
  /set nothink           Disable thinking
  /set format json       Enable JSON mode
  /set noformat          Disable formatting
  /set verbose           Show LLM stats
  /set quiet             Disable LLM stats
`

const SHOW_HELP = `Available Commands:
  /show info         Show details for this model
  /show parameters   Show parameters for this model
  /show system       Show system message
  /show template     Show prompt template
`

const SHORTCUTS_HELP = `Available keyboard shortcuts:
  Ctrl + a            Move to the beginning of the line (Home)
  Ctrl + e            Move to the end of the line (End)
  Ctrl + k            Delete the sentence after the cursor
  Ctrl + u            Delete the sentence before the cursor
  Ctrl + w            Delete the word before the cursor
  Up, Down            Earlier and later lines

  Ctrl + l            Clear the screen
  Ctrl + c            Stop the model from responding
  Ctrl + d            Exit llamagate (/bye)
`

const PARAMETER_HELP = `Available Parameters:
  /set parameter seed <int>             Random number seed
  /set parameter num_predict <int>      Max number of tokens to predict
  /set parameter top_k <int>            Pick from top k num of tokens
  /set parameter top_p <float>          Pick token based on sum of probabilities
  /set parameter min_p <float>          Pick token based on top token probability * min_p
  /set parameter num_ctx <int>          Set the context size
  /set parameter temperature <float>    Set creativity level
  /set parameter repeat_penalty <float> How strongly to penalize repetitions
  /set parameter repeat_last_n <int>    Set how far back to look for repetitions
  /set parameter ignore_eos <bool>      Keep generating past the end of the answer
  /set parameter stop <string> <string> ...   Set the stop parameters
`
