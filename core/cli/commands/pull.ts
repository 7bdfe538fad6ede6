import { CLIENT_FLAGS, CLIENT_OPTIONS, type Command, type CommandContext } from './command.js'
import { ServerError } from '../../platform/gateway-client.js'
import type { PullEvent } from './pull-progress.js'
import { UsageError } from '../../platform/usage-error.js'

/** A pull stopped by its signal (Ctrl-C): the line saying so is written already; the caller exits 130. */
export class PullInterruptedError extends Error {
  override name = 'PullInterruptedError'
  constructor (readonly model: string) { super(`the pull of ${model} was interrupted`) }
}

/**
 * Pulls `model` through the server, drawing its progress on `ctx.stderr` (bars on a terminal, plain lines
 * elsewhere) and writing the final line on `ctx.stdout`. `ctx.values.dtype`, when set, is the GGUF type a
 * SafeTensors model is converted to. Aborting `signal` cancels the request: the server stops the download once
 * no client waits for it and keeps the partial data, which the next pull resumes.
 * @throws PullInterruptedError when `signal` aborted it (after saying so on stderr); ServerError,
 *   ServerUnreachableError, InvalidModelNameError or UsageError otherwise.
 */
export async function pullModel (ctx: CommandContext, model: string, signal?: AbortSignal): Promise<void> {
  // A name the server would refuse is refused here, without asking it. (Both checks load the request schemas,
  // which the other commands start without.)
  // The bars' module too: every command (and `serve`) loads this one to start.
  const [{ parseModelName }, { CONVERTER_DTYPES, QUANTIZE_DTYPES }, { pullProgress }] = await Promise.all([
    import('../../base/model-name.js'), import('../../config/options-schema.js'), import('./pull-progress.js'),
  ])
  parseModelName(model)
  const dtype = dtypeOf(ctx.values.dtype, [...CONVERTER_DTYPES, ...QUANTIZE_DTYPES])
  const started = Date.now()
  const progress = pullProgress(ctx.stderr)
  let succeeded = false
  try {
    const body = { model, stream: true, ...(dtype !== undefined ? { options: { dtype } } : {}) }
    for await (const event of ctx.client().stream<PullEvent>('/api/pull', body, signal)) {
      progress.update(event)
      if (event.status === 'success') succeeded = true
    }
  } catch (err) {
    // The bars go first, so that the terminal is line-based again for whatever is written next.
    progress.stop()
    if (signal?.aborted) {
      ctx.stderr.write(`interrupted: the partial download of ${model} is kept; run the same command to resume it\n`)
      throw new PullInterruptedError(model)
    }
    throw err
  }
  progress.stop()
  if (!succeeded) throw new ServerError(200, `the server ended the pull of ${model} without saying it succeeded`)
  ctx.stdout.write(`${progress.summary(model, Date.now() - started)}\n`)
}

function dtypeOf (value: unknown, DTYPES: readonly string[]): string | undefined {
  if (typeof value !== 'string') return undefined
  const dtype = value.toLowerCase()
  if (!DTYPES.includes(dtype)) throw new UsageError(`--dtype "${value}" is not a GGUF type the converter makes; one of ${DTYPES.join(', ')}`)
  return dtype
}

export const pull: Command = {
  name: 'pull',
  summary: 'download a model from the Hugging Face hub, with progress; run again to resume',
  usage: ['llamagate pull <owner>/<name>[:tag] [--dtype TYPE] [--host URL] [--config FILE]'],
  flags: [
    '--dtype TYPE     the GGUF type a SafeTensors model is converted to (f16, q8_0, q4_k_m, ...; default: the server\'s)',
    ...CLIENT_FLAGS,
  ],
  options: { ...CLIENT_OPTIONS, dtype: { type: 'string' } },
  positionals: { min: 1, max: 1 },
  positionalsHint: 'expected one model: <owner>/<name>[:tag]',
  async run (ctx) {
    // Ctrl-C ends the request rather than the process: the bars are stopped and the terminal left sane.
    // A second Ctrl-C, while that happens, is the default one.
    const controller = new AbortController()
    const interrupt = (): void => controller.abort()
    process.once('SIGINT', interrupt)
    try {
      await pullModel(ctx, ctx.positionals[0]!, controller.signal)
      return 0
    } catch (err) {
      if (err instanceof PullInterruptedError) return 130
      throw err
    } finally {
      process.removeListener('SIGINT', interrupt)
    }
  },
}
