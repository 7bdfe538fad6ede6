import { createHash } from 'node:crypto'
import { createReadStream } from 'node:fs'
import { readFile, stat } from 'node:fs/promises'
import { homedir } from 'node:os'
import { basename, dirname, resolve } from 'node:path'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { CLIENT_FLAGS, CLIENT_OPTIONS, type Command } from './command.js'
import { ServerError, type GatewayClient } from '../../platform/gateway-client.js'
import { formatBytes } from './human.js'
import { ModelfileError, parseModelfile, type Modelfile } from './modelfile.js'

interface CreateEvent { status: string, total?: number, completed?: number }

/**
 * `ollama create` for llamagate: a Modelfile's FROM (a local model, or a GGUF file uploaded first), SYSTEM,
 * PARAMETER and TEMPLATE sent to /api/create, its statuses shown as they come.
 */
export const create: Command = {
  name: 'create',
  summary: 'make a model from a Modelfile (FROM, SYSTEM, PARAMETER, TEMPLATE)',
  usage: ['llamagate create <owner>/<name> [-f Modelfile] [--quantize TYPE] [--host URL] [--config FILE]'],
  flags: [
    '-f, --file FILE  the Modelfile (default: ./Modelfile); FROM a .gguf path is read relative to its folder',
    '--quantize TYPE  quantize the GGUF with llama-quantize (q8_0, q4_k_m, ...)',
    ...CLIENT_FLAGS,
  ],
  options: { ...CLIENT_OPTIONS, file: { type: 'string', short: 'f' }, quantize: { type: 'string', short: 'q' } },
  positionals: { min: 1, max: 1 },
  positionalsHint: 'expected <owner>/<name>',
  async run ({ values, positionals, stdout, stderr, client }) {
    const [name] = positionals as [string]
    const path = resolve((values.file as string | undefined) ?? 'Modelfile')
    const fail = (message: string): number => { stderr.write(`llamagate create: ${message}\n`); return 1 }
    let modelfile: Modelfile
    try {
      modelfile = parseModelfile(await readFile(path, 'utf8'))
    } catch (err) {
      if (err instanceof ModelfileError) return fail(`${path}: ${err.message}`)
      const code = (err as NodeJS.ErrnoException).code
      return fail(`cannot read the Modelfile ${path}: ${code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'it is a folder' : (err as Error).message}`)
    }
    // The server ignores options it does not know; a typo would otherwise go unnoticed. (Loaded here: the option
    // schemas are a noticeable part of a second that the other commands start without.)
    const { KNOWN_OPTIONS } = await import('../../config/options-schema.js')
    for (const [key, line] of Object.entries(modelfile.parameterLines)) {
      if (!KNOWN_OPTIONS.includes(key)) stderr.write(`llamagate create: warning: ${path} line ${line}: PARAMETER ${key} is not an option llamagate knows; the model is made without it having any effect\n`)
    }
    const body: Record<string, unknown> = {
      model: name,
      ...(modelfile.system !== undefined ? { system: modelfile.system } : {}),
      ...(modelfile.template !== undefined ? { template: modelfile.template } : {}),
      ...(Object.keys(modelfile.parameters).length > 0 ? { parameters: modelfile.parameters } : {}),
      ...(values.quantize !== undefined ? { quantize: values.quantize } : {}),
    }
    const source = ggufPath(modelfile.from.value, dirname(path))
    if (source === null) {
      body.from = modelfile.from.value
    } else {
      const info = await stat(source).catch(() => null)
      if (info === null || !info.isFile()) return fail(`${path} line ${modelfile.from.line}: FROM ${modelfile.from.value}: ${info === null ? 'no such file' : 'not a file'} (${source})`)
      body.files = { [fileName(source)]: await upload(client(), source, info.size, stdout) }
    }
    const progress = new StatusPrinter(stdout)
    let done = false
    try {
      for await (const event of client().stream<CreateEvent>('/api/create', body)) {
        progress.show(event)
        if (event.status === 'success') done = true
      }
    } finally {
      progress.end()
    }
    if (!done) return fail(`the server ended the answer before "success": ${name} may not have been made`)
    stdout.write(`created ${name}\n`)
    return 0
  },
}

/**
 * The file FROM names, or null when it names a model. As in Ollama, a path is absolute, starts with `.` or
 * `~`, or ends in `.gguf`; anything else (`acme/tiny`) is a model name.
 */
function ggufPath (from: string, base: string): string | null {
  if (from === '~' || from.startsWith('~/')) return resolve(homedir(), from.slice(2))
  if (from.startsWith('/') || from.startsWith('./') || from.startsWith('../') || /\.gguf$/i.test(from)) return resolve(base, from)
  return null
}

/** The name the server files the upload under: letters, digits, `.`, `_`, `-`, ending in `.gguf`. */
function fileName (path: string): string {
  const name = basename(path).replace(/[^\w.-]/g, '-').replace(/^\.+/, '')
  return /\.gguf$/i.test(name) ? name : `${name || 'model'}.gguf`
}

/** Hashes the file, then sends it unless the server has it already; streamed both times, never held in memory. */
async function upload (client: GatewayClient, path: string, size: number, stdout: NodeJS.WritableStream): Promise<string> {
  stdout.write(`hashing ${basename(path)} (${formatBytes(size)})\n`)
  const hash = createHash('sha256')
  await pipeline(createReadStream(path), hash)
  const digest = `sha256:${hash.digest('hex')}`
  try {
    await client.send('HEAD', `/api/blobs/${digest}`)
    stdout.write(`${basename(path)} is on the server already\n`)
    return digest
  } catch (err) {
    if (!(err instanceof ServerError && err.status === 404)) throw err
  }
  stdout.write(`uploading ${basename(path)} (${formatBytes(size)})\n`)
  await client.send('POST', `/api/blobs/${digest}`, { raw: Readable.toWeb(createReadStream(path)) as ReadableStream<Uint8Array>, length: size })
  return digest
}

/**
 * The server's statuses, one line each. On a terminal a status with progress (`quantizing q8_0`, 3 of 21
 * tensors) redraws its line; elsewhere it prints at each quarter, so that a log stays short.
 */
class StatusPrinter {
  private status = ''
  private open = false
  private lastQuarter = -1
  constructor (private readonly out: NodeJS.WriteStream) {}

  show (event: CreateEvent): void {
    const fresh = event.status !== this.status
    if (fresh) { this.end(); this.status = event.status; this.lastQuarter = -1 }
    if (event.total === undefined || event.completed === undefined || event.total <= 0) {
      if (fresh) this.out.write(`${event.status}\n`)
      return
    }
    const percent = Math.floor((event.completed / event.total) * 100)
    const line = `${event.status} ${percent}% (${event.completed}/${event.total})`
    if (this.out.isTTY === true) {
      this.out.write(`\r\x1b[2K${line}`)
      this.open = true
    } else if (Math.floor(percent / 25) > this.lastQuarter) {
      this.lastQuarter = Math.floor(percent / 25)
      this.out.write(`${line}\n`)
    }
  }

  /** Ends a line left open for redrawing (before the next status, an error, or the end). */
  end (): void {
    if (this.open) this.out.write('\n')
    this.open = false
  }
}
