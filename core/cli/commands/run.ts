import { GatewayError } from '../../base/errors.js'
import { parseDuration } from '../../base/units.js'
import { ParameterError, parseParameter, parseThink, type ChatState } from './chat-commands.js'
import { CLIENT_FLAGS, CLIENT_OPTIONS, type Command, type CommandContext, type OptionValues } from './command.js'
import { ServerError } from '../../platform/gateway-client.js'
import { pullModel, PullInterruptedError } from './pull.js'
import { UsageError } from '../../platform/usage-error.js'

/**
 * `ollama run`: with a prompt (arguments, text on stdin, or both) the answer is streamed to stdout and the
 * command ends; with neither, on a terminal, a chat (chat-session.ts). A model that is not here is pulled first.
 */
export const run: Command = {
  name: 'run',
  summary: 'answer a prompt, or chat in the terminal; pulls the model first if it is missing',
  usage: ['llamagate run <model> [prompt...] [--think[=VALUE]] [--hide-thinking] [--keep-alive D] [--format json] [--parameter NAME=VALUE]... [--verbose]'],
  flags: [
    '--think[=VALUE]  thinking: true (alone: --think), false or an effort (low, medium, high, max); default: on for models that think',
    '--hide-thinking  show only the answer, not the thinking before it (also --hidethinking)',
    '--keep-alive D   how long the model stays loaded when idle: 5m, 1h, 0, -1 for ever (also --keepalive)',
    '--format FORMAT  json, or a JSON schema the answer must follow',
    '--parameter N=V  a model parameter, as /set parameter takes it: num_predict=64, temperature=0.2, stop=... (repeatable)',
    '--verbose        print timings after each answer',
    ...CLIENT_FLAGS,
  ],
  options: {
    ...CLIENT_OPTIONS,
    think: { type: 'string' },
    'hide-thinking': { type: 'boolean' },
    hidethinking: { type: 'boolean' },
    'keep-alive': { type: 'string' },
    keepalive: { type: 'string' },
    format: { type: 'string' },
    parameter: { type: 'string', multiple: true },
    verbose: { type: 'boolean' },
  },
  bareValues: { think: 'true' },
  positionals: { min: 1, max: Infinity },
  positionalsHint: 'expected <model> [prompt...]',
  async run (ctx) {
    const model = ctx.positionals[0]!
    const state = await chatState(model, ctx.values)
    const prompt = await promptOf(ctx)
    const info = await modelInfo(ctx, model)
    if (info === undefined) return 130
    const thinks = info.capabilities.includes('thinking')
    // As Ollama: a model that thinks is asked to, unless told otherwise.
    if (state.think === undefined && thinks) state.think = true
    const io = { client: ctx.client(), stdout: ctx.stdout, stderr: ctx.stderr }
    // Loaded here, not at the top: every command (and `serve`) loads this module to start, and the spinner's does not.
    const [{ chatSession }, { loadModel, streamAnswer }] = await Promise.all([import('./chat-session.js'), import('./chat-turn.js')])
    if (prompt === undefined && ctx.stdin.isTTY && ctx.stdout.isTTY) {
      // Said before the chat starts rather than at its first question, in the server's words.
      if (state.think !== undefined && state.think !== false && !thinks) throw new GatewayError(400, `"${model}" does not support thinking`)
      return chatSession({ ...io, stdin: ctx.stdin }, state)
    }
    // Nothing to ask (an empty pipe, or no terminal to chat in): only load the model, as `ollama run` does.
    if (prompt === undefined || prompt === '') await loadModel(io, state)
    else await streamAnswer(io, state, [{ role: 'user', content: prompt }], 1)
    return 0
  },
}

/** The chat's settings from the flags. @throws UsageError for a value that cannot be right */
async function chatState (model: string, values: OptionValues): Promise<ChatState> {
  const thinkFlag = values.think as string | undefined
  const think = thinkFlag === undefined ? undefined : parseThink(thinkFlag)
  if (thinkFlag !== undefined && think === undefined) throw new UsageError(`--think "${thinkFlag}": use true, false, low, medium, high or max`)
  const keepAlive = (values['keep-alive'] ?? values.keepalive) as string | undefined
  if (keepAlive !== undefined && parseDuration(keepAlive) === null) {
    throw new UsageError(`--keep-alive "${keepAlive}" is not a duration: use seconds (300) or 5m, 1h, 0 (unload at once), -1 (stay loaded)`)
  }
  return {
    model,
    system: undefined,
    history: [],
    options: await parameters((values.parameter as string[] | undefined) ?? []),
    think,
    hideThinking: values['hide-thinking'] === true || values.hidethinking === true,
    format: formatOf(values.format as string | undefined),
    keepAlive,
    verbose: values.verbose === true,
  }
}

/** `--parameter NAME=VALUE`s as options; `stop` may be given again for each stop word. */
async function parameters (flags: string[]): Promise<Record<string, unknown>> {
  const options: Record<string, unknown> = {}
  for (const flag of flags) {
    const eq = flag.indexOf('=')
    if (eq < 1) throw new UsageError(`--parameter "${flag}": expected NAME=VALUE, such as num_predict=64`)
    const name = flag.slice(0, eq)
    const value = flag.slice(eq + 1)
    try {
      options[name] = await parseParameter(name, name === 'stop' ? [...(options.stop as string[] | undefined ?? []), value] : [value])
    } catch (err) {
      if (err instanceof ParameterError) throw new UsageError(`--parameter ${flag}: ${err.message}`)
      throw err
    }
  }
  return options
}

function formatOf (flag: string | undefined): unknown {
  if (flag === undefined || flag === 'json') return flag
  let schema: unknown
  try {
    schema = JSON.parse(flag)
  } catch {
    // reported below
  }
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) throw new UsageError(`--format "${flag}": use json, or a JSON schema (an object)`)
  return schema
}

/**
 * The prompt as Ollama makes it: text on stdin (when stdin is not a terminal) first, then the arguments, joined
 * by a space. Undefined when there is neither and stdin is a terminal: a chat, then.
 */
async function promptOf (ctx: CommandContext): Promise<string | undefined> {
  const parts = ctx.positionals.slice(1)
  if (!ctx.stdin.isTTY) {
    let piped = ''
    ctx.stdin.setEncoding('utf8')
    for await (const chunk of ctx.stdin) piped += String(chunk)
    if (piped !== '') parts.unshift(piped)
    return parts.join(' ')
  }
  return parts.length > 0 ? parts.join(' ') : undefined
}

/**
 * The model's /api/show, after pulling it if the server does not have it (as `ollama run` does). Ctrl-C during
 * the pull stops it and gives undefined.
 */
async function modelInfo (ctx: CommandContext, model: string): Promise<{ capabilities: string[] } | undefined> {
  const client = ctx.client()
  try {
    return await client.json('POST', '/api/show', { model })
  } catch (err) {
    if (!(err instanceof ServerError && err.status === 404)) throw err
  }
  const controller = new AbortController()
  const interrupt = (): void => controller.abort()
  process.once('SIGINT', interrupt)
  try {
    // The pull's last line goes with its progress, on stderr: stdout is the answer's.
    await pullModel({ ...ctx, stdout: ctx.stderr }, model, controller.signal)
  } catch (err) {
    if (err instanceof PullInterruptedError) return undefined
    throw err
  } finally {
    process.removeListener('SIGINT', interrupt)
  }
  return await client.json('POST', '/api/show', { model })
}
