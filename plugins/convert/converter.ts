import { existsSync, readdirSync, statSync } from 'node:fs'
import { readdir, rename, rm, stat } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { readGgufHeader } from '../../core/base/gguf-header.js'
import { BadRequestError, ConversionError } from '../../core/base/errors.js'
import { EventHub } from '../../core/base/event-hub.js'
import type { Logger } from '../../core/base/logger.js'
import { CONVERTER_DTYPES, QUANTIZE_DTYPES } from '../../core/config/options-schema.js'
import { isAlive } from '../../core/base/process-alive.js'
import { sha256File } from '../storage/file-hash.js'
import { checkCheckpoint } from './checkpoint-check.js'
import type { ConverterEvents } from './converter-events.js'
import { APT_COMMAND, checkPython, pythonCandidates, SHIM_RUNNER, type ConverterReadiness } from './python-env.js'
import { runTool, type ToolRun } from './run-tool.js'
import { SharedRuns } from './shared-runs.js'
import { progressParser } from './tool-progress.js'

export interface ConverterOptions {
  /** The Python interpreter (config `conversion.python`); null tries llamagate's venv, /usr/bin/python3, python3. @default null */
  python: string | null
  /** The llama.cpp tree holding convert_hf_to_gguf.py (config `llama_cpp_src`); null: `buildSource`, else the newest `<dataDir>/src/llama.cpp-*`. @default null */
  llamaCppSrc: string | null
  /** llamagate's data folder: its `converter-venv` and `src/` are looked in. */
  dataDir: string
  /** The tree the runtime build was made from (its build-info.json), so the converter matches llama-quantize. @default null */
  buildSource?: string | null
  /** llama-quantize, for every type but f32, f16, bf16 and q8_0; null: those types only. */
  quantizePath: string | null
  /** A tool run longer than this is killed with its whole process group (config `conversion.timeout`). */
  timeoutMs: number
  /** Where conversions are logged; pino-compatible (app.log). @default silent */
  log?: Pick<Logger, 'info' | 'warn'>
}

export interface ConvertProgress { status: string, completed?: number, total?: number }
export interface ConvertRequest {
  /** The SafeTensors model's folder (config.json, *.safetensors, tokenizer); the GGUF is written there. */
  modelDir: string
  /** f32, f16, bf16, q8_0 (made by the converter) or a llama-quantize type (q4_k_m, q6_k, ...). */
  dtype: string
  /** Aborting kills the tool's process group and removes its partial output. */
  signal?: AbortSignal
  onProgress?: (progress: ConvertProgress) => void
}
export interface MadeVariant { dtype: string, file: string, size: number, sha256: string }

/** Something a conversion waits for before it gives up on a converter that is not ready (its preparation). */
export interface ReadinessGate {
  /** Whether waiting could change the answer: the preparation is checking or installing now. */
  readonly pending: boolean
  /** Resolves when it is over, telling `onProgress` what it does meanwhile; rejects with the signal's reason. */
  wait (opts: { signal?: AbortSignal, onProgress?: (progress: ConvertProgress) => void }): Promise<void>
}

const DIRECT = new Set<string>(CONVERTER_DTYPES)
const QUANTIZED = new Set<string>(QUANTIZE_DTYPES)
// A ready interpreter is trusted this long before readiness() imports the converter again (~1.3 s)...
const READY_CACHE_MS = 60_000
// ...and any answer this long when a caller asks for a fresh one (GET /api/convert/status), or when it said not
// ready: an `apt-get install` shows within seconds, and no rate of requests starts more than one Python per span.
const FRESH_MS = 5_000

/** The file a variant lives in, inside the model's folder. */
function variantFileName (dtype: string): string { return `model-${dtype}.gguf` }

/**
 * SafeTensors → GGUF with llama.cpp's own tools, driven as child processes: convert_hf_to_gguf.py for f32,
 * f16, bf16 and q8_0; the f16 variant then llama-quantize for every other type. Output goes to a temporary
 * name in the model's folder and is renamed to `model-<dtype>.gguf` only when the tool exited 0 and the file
 * reads as a GGUF; any failure removes it, so the SafeTensors model stays as it was, ready for a later try.
 */
export class Converter {
  private readonly runs = new SharedRuns<MadeVariant, ConvertProgress>()
  private ready: { at: number, fingerprint: string, value: ConverterReadiness } | null = null
  private checking: Promise<ConverterReadiness> | null = null
  private closed = false
  private gate: ReadinessGate | null = null
  /** Conversions made and failed, for observers (metrics). */
  readonly events: EventHub<ConverterEvents>

  constructor (private readonly options: ConverterOptions) {
    this.events = new EventHub((err) => options.log?.warn({ err }, 'a converter observer failed'))
  }

  /** The llama.cpp tree to run the converter from, or null when there is none. */
  sourceTree (): string | null {
    const { llamaCppSrc, buildSource, dataDir } = this.options
    if (llamaCppSrc) return llamaCppSrc
    if (buildSource && existsSync(join(buildSource, 'convert_hf_to_gguf.py'))) return buildSource
    const root = join(dataDir, 'src')
    if (!existsSync(root)) return null
    const trees = readdirSync(root)
      .filter((d) => d.startsWith('llama.cpp-') && existsSync(join(root, d, 'convert_hf_to_gguf.py')))
      .sort((a, b) => b.localeCompare(a, 'en', { numeric: true }))
    return trees[0] ? join(root, trees[0]) : null
  }

  /**
   * Whether conversion can run (the interpreter really imports the converter), and if not, what to install.
   * Callers share one check and its answer while the files it depends on stay as they were: each check starts a
   * Python that imports torch (~2 s of CPU), and a status page polled by many clients must not start one each.
   */
  async readiness (opts: { fresh?: boolean } = {}): Promise<ConverterReadiness> {
    const fingerprint = this.fingerprint()
    const last = this.ready
    const trusted = opts.fresh === true || last?.value.ready !== true ? FRESH_MS : READY_CACHE_MS
    if (last !== null && last.fingerprint === fingerprint && Date.now() - last.at < trusted) return last.value
    this.checking ??= this.check()
      .then((value) => { this.ready = { at: Date.now(), fingerprint, value }; return value })
      .finally(() => { this.checking = null })
    return this.checking
  }

  /** Drops the answer kept: the interpreter's packages changed (an install ran), which the fingerprint cannot see. */
  forget (): void {
    this.ready = null
  }

  /** A conversion that finds the converter not ready waits on `gate` first (the start's preparation). */
  waitFor (gate: ReadinessGate): void {
    this.gate = gate
  }

  /** What a readiness answer depends on, short of the interpreter's packages: the tree, the script, each interpreter, llama-quantize. */
  private fingerprint (): string {
    const src = this.sourceTree()
    const files = [src === null ? null : join(src, 'convert_hf_to_gguf.py'), ...pythonCandidates(this.options.python, this.options.dataDir), this.options.quantizePath]
    return JSON.stringify(files.map((file) => {
      if (file === null) return null
      try {
        const { mtimeMs, size, ino } = statSync(file)
        return [file, mtimeMs, size, ino]
      } catch { return [file] }
    }))
  }

  private async check (): Promise<ConverterReadiness> {
    const problems: string[] = []
    const src = this.sourceTree()
    const script = src ? join(src, 'convert_hf_to_gguf.py') : null
    if (!src) problems.push('no llama.cpp source tree with convert_hf_to_gguf.py: set llama_cpp_src, or build the runtime (npm run runtime:build), which fetches one')
    else if (!existsSync(script!)) problems.push(`${src} has no convert_hf_to_gguf.py (llama_cpp_src must name a llama.cpp source tree)`)
    let python: string | null = null
    let papered: string[] = []
    if (script && existsSync(script)) {
      for (const candidate of pythonCandidates(this.options.python, this.options.dataDir)) {
        const check = await checkPython(candidate, script)
        if (check.ok) { python = candidate; papered = check.papered; break }
        problems.push(check.error)
      }
    }
    const ready = python !== null
    const quantize = this.options.quantizePath && existsSync(this.options.quantizePath) ? this.options.quantizePath : null
    if (!quantize) problems.push('no llama-quantize: only f32, f16, bf16 and q8_0 can be made (build the runtime: npm run runtime:build)')
    let fix: string | null = null
    if (!src) fix = 'npm run runtime:build (or set llama_cpp_src to a llama.cpp source tree)'
    else if (!ready) {
      fix = `npm run setup:converter; or by hand: on Debian/Ubuntu, ${APT_COMMAND} (as root); elsewhere, python3 -m venv ${join(this.options.dataDir, 'converter-venv')} && ${join(this.options.dataDir, 'converter-venv', 'bin', 'pip')} install -r ${join(src, 'requirements', 'requirements-convert_hf_to_gguf.txt')}`
    } else if (!quantize) fix = 'npm run runtime:build (for llama-quantize)'
    const value: ConverterReadiness = {
      ready,
      python,
      shim: papered.length > 0,
      papered,
      llamaCppSrc: src,
      quantize,
      // Once ready, the failed candidates before the one that worked are not problems.
      problems: ready ? problems.filter((p) => p.includes('llama-quantize')) : problems,
      fix,
    }
    return value
  }

  /**
   * Makes the GGUF of `dtype` from the checkpoint in `modelDir`, whatever is there already (the f16 a
   * quantization starts from is reused, though).
   * @throws ConversionError (422: the tool failed on these files; 503: the tools are missing; 500: time limit), or the signal's reason
   */
  async convert (req: ConvertRequest): Promise<MadeVariant> {
    const dtype = checkDtype(req.dtype)
    const modelDir = resolve(req.modelDir)
    if (this.closed) throw new ConversionError('the converter is shutting down', [], 503, 'converter_unavailable')
    await removeStaleTemporaries(modelDir, dtype)
    const target = join(modelDir, variantFileName(dtype))
    const started = Date.now()
    try {
      const made = DIRECT.has(dtype)
        ? await this.convertHf(modelDir, dtype, target, req)
        : await this.quantize(modelDir, dtype, target, req)
      this.options.log?.info({ modelDir, dtype, size: made.size, ms: Date.now() - started }, 'conversion finished')
      this.events.emit('converted', dtype, (Date.now() - started) / 1000)
      return made
    } catch (err) {
      // The whole tail goes to the log; the client gets the one line that says why.
      this.options.log?.warn({ modelDir, dtype, ms: Date.now() - started, err: (err as Error).message, tail: (err as ConversionError).toolTail }, 'conversion failed')
      if (req.signal?.aborted !== true) this.events.emit('failed', dtype, err)
      throw err
    }
  }

  /**
   * The GGUF of `dtype`: the one already in `modelDir` if there is a valid one, else made by `convert`.
   * Concurrent callers for the same folder and dtype share one run; one caller leaving (its signal) does not
   * stop it for the others, the last one leaving does.
   */
  ensureVariant (req: ConvertRequest): Promise<MadeVariant> {
    let dtype: string
    try { dtype = checkDtype(req.dtype) } catch (err) { return Promise.reject(err) }
    const modelDir = resolve(req.modelDir)
    return this.runs.join(`${modelDir}\0${dtype}`, async (signal, emit) => {
      return await existingVariant(modelDir, dtype) ?? await this.convert({ modelDir, dtype, signal, onProgress: emit })
    }, { signal: req.signal, onProgress: req.onProgress })
  }

  /** Stops every conversion (gateway shutdown) and waits until their partial files are removed. */
  async close (): Promise<void> {
    this.closed = true
    await this.runs.abort(new ConversionError('the gateway is shutting down', [], 503, 'converter_unavailable'))
  }

  /** Stops the conversions of one model (it is being deleted) and waits until their partial files are gone. */
  async cancel (modelDir: string): Promise<void> {
    const prefix = `${resolve(modelDir)}\0`
    await this.runs.abort(new ConversionError('the model was deleted during its conversion', [], 409, 'conflict'), (key) => key.startsWith(prefix))
  }

  private async interpreter (req: ConvertRequest): Promise<{ python: string, shim: boolean, src: string }> {
    let r = await this.readiness()
    if (!r.ready && this.gate?.pending === true) {
      await this.gate.wait({ signal: req.signal, onProgress: req.onProgress })
      r = await this.readiness({ fresh: true })
    }
    if (!r.ready || !r.python || !r.llamaCppSrc) {
      throw new ConversionError(`SafeTensors conversion is not available here: ${r.problems.join('; ')}. To fix: ${r.fix}`, [], 503, 'converter_unavailable')
    }
    return { python: r.python, shim: r.shim, src: r.llamaCppSrc }
  }

  private async convertHf (modelDir: string, dtype: string, target: string, req: ConvertRequest): Promise<MadeVariant> {
    await checkCheckpoint(modelDir)
    const { python, shim, src } = await this.interpreter(req)
    const script = join(src, 'convert_hf_to_gguf.py')
    const temporary = temporaryName(target)
    const status = `converting to gguf (${dtype})`
    req.onProgress?.({ status })
    const args = [script, modelDir, '--outfile', temporary, '--outtype', dtype]
    try {
      const run = await runTool(python, shim ? [SHIM_RUNNER, ...args] : args, {
        env: { ...process.env, PYTHONUNBUFFERED: '1' },
        timeoutMs: this.options.timeoutMs,
        signal: req.signal,
        onLine: progressParser(status, req.onProgress),
      })
      this.checkRun(run, `convert_hf_to_gguf.py (${dtype})`, req.signal)
      return await this.adopt(temporary, target, dtype)
    } finally {
      await rm(temporary, { force: true })
    }
  }

  private async quantize (modelDir: string, dtype: string, target: string, req: ConvertRequest): Promise<MadeVariant> {
    this.quantizeTool(dtype)
    const f16 = await this.ensureVariant({ modelDir, dtype: 'f16', signal: req.signal, onProgress: req.onProgress })
    return this.runQuantize(f16.file, dtype, target, req)
  }

  /**
   * A GGUF file quantized to `dtype` by llama-quantize (a model created with `quantize`), written to `target`
   * through a temporary name and checked to be a GGUF before it is renamed.
   * @throws BadRequestError (an unknown dtype), ConversionError (503: no llama-quantize; 422: it failed), or the signal's reason
   */
  async quantizeGguf (req: { source: string, dtype: string, target: string, signal?: AbortSignal, onProgress?: (progress: ConvertProgress) => void }): Promise<MadeVariant> {
    const dtype = checkDtype(req.dtype)
    this.quantizeTool(dtype)
    if (this.closed) throw new ConversionError('the converter is shutting down', [], 503, 'converter_unavailable')
    return this.runQuantize(req.source, dtype, req.target, req)
  }

  private quantizeTool (dtype: string): string {
    const quantize = this.options.quantizePath
    if (!quantize || !existsSync(quantize)) {
      throw new ConversionError(`making ${dtype} needs llama-quantize, and no runtime build has it: npm run runtime:build (f32, f16, bf16 and q8_0 need only the converter)`, [], 503, 'converter_unavailable')
    }
    return quantize
  }

  private async runQuantize (source: string, dtype: string, target: string, req: { signal?: AbortSignal, onProgress?: (progress: ConvertProgress) => void }): Promise<MadeVariant> {
    const status = `quantizing ${dtype}`
    req.onProgress?.({ status })
    const temporary = temporaryName(target)
    try {
      const run = await runTool(this.quantizeTool(dtype), [source, temporary, dtype.toUpperCase()], {
        timeoutMs: this.options.timeoutMs,
        signal: req.signal,
        onLine: progressParser(status, req.onProgress),
      })
      this.checkRun(run, `llama-quantize (${dtype})`, req.signal)
      return await this.adopt(temporary, target, dtype)
    } finally {
      await rm(temporary, { force: true })
    }
  }

  private checkRun (run: ToolRun, what: string, signal?: AbortSignal): void {
    if (run.aborted) throw signal?.reason ?? new ConversionError(`${what} was cancelled`)
    if (run.spawnError) {
      this.ready = null // look again next time: the interpreter went away
      throw new ConversionError(`${what} could not start: ${run.spawnError}`, run.tail, 503, 'converter_unavailable')
    }
    if (run.timedOut) {
      throw new ConversionError(`${what} ran past the time limit (conversion.timeout, ${formatDuration(this.options.timeoutMs)}) and was stopped`, run.tail, 500, 'conversion_timeout')
    }
    if (run.exitCode !== 0) throw new ConversionError(`${what} failed (exit ${run.exitCode}): ${reasonOf(run.tail)}`, run.tail)
  }

  /** Checks the tool's output is a GGUF (header, metadata and tensor table), then moves it in place. */
  private async adopt (temporary: string, target: string, dtype: string): Promise<MadeVariant> {
    const problem = await ggufProblem(temporary)
    if (problem) throw new ConversionError(`the ${dtype} output is not a valid GGUF (${problem}); nothing was kept`, [], 500)
    await rename(temporary, target)
    return await describe(dtype, target)
  }
}

function checkDtype (dtype: string): string {
  const lower = dtype.toLowerCase()
  if (!DIRECT.has(lower) && !QUANTIZED.has(lower)) {
    throw new BadRequestError(`unknown dtype ${JSON.stringify(dtype)}: expected one of ${[...DIRECT, ...QUANTIZED].join(', ')}`, 'invalid_dtype')
  }
  return lower
}

// The pid in the name lets a later run tell a dead process's leftovers from a live conversion's output.
function temporaryName (target: string): string { return `${target}.tmp-${process.pid}-${Date.now()}` }

async function removeStaleTemporaries (dir: string, dtype: string): Promise<void> {
  const prefix = `${variantFileName(dtype)}.tmp-`
  let names: string[]
  try { names = await readdir(dir) } catch { return }
  for (const name of names.filter((n) => n.startsWith(prefix))) {
    const pid = Number(name.slice(prefix.length).split('-')[0])
    if (pid !== process.pid && !isAlive(pid)) await rm(join(dir, name), { force: true })
  }
}

async function ggufProblem (file: string): Promise<string | null> {
  try {
    const { tensors } = await readGgufHeader(file, { maxArrayLength: 0 })
    if (tensors.length === 0) return 'no tensors'
    return null
  } catch (err) {
    return (err as Error).message
  }
}

async function existingVariant (modelDir: string, dtype: string): Promise<MadeVariant | null> {
  const file = join(modelDir, variantFileName(dtype))
  if (!existsSync(file)) return null
  // Only a checked file is ever renamed to this name; a damaged one (disk trouble) is made again.
  if (await ggufProblem(file)) {
    await rm(file, { force: true })
    return null
  }
  return await describe(dtype, file)
}

async function describe (dtype: string, file: string): Promise<MadeVariant> {
  return { dtype, file, size: (await stat(file)).size, sha256: await sha256File(file) }
}

/**
 * The tool's own reason: convert_hf_to_gguf.py logs `ERROR:hf-to-gguf:...` or ends with a Python
 * exception line; llama-quantize prints `... failed` / `error: ...`. Falls back to the last lines.
 */
export function reasonOf (tail: string[]): string {
  const lines = tail.filter((l) => !/^\s*(Writing:|\[\s*\d+\/\s*\d+\])/.test(l))
  const logged = lines.filter((l) => /^ERROR:/.test(l)).map((l) => l.replace(/^ERROR:[\w.-]*:/, ''))
  if (logged.length > 0) return logged.slice(-2).join(' | ')
  const exception = lines.findLast((l) => /^[A-Za-z_][\w.]*(Error|Exception|Interrupt)\b/.test(l))
  if (exception) return exception
  const words = lines.filter((l) => /error|failed|invalid|not supported|cannot|unable/i.test(l))
  return (words.length > 0 ? words.slice(-2) : lines.slice(-3)).join(' | ') || 'no output'
}

function formatDuration (ms: number): string {
  return ms >= 60_000 && ms % 60_000 === 0 ? `${ms / 60_000} min` : `${Math.round(ms / 100) / 10} s`
}
