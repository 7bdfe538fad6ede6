import { createHash } from 'node:crypto'
import { createReadStream, existsSync, readdirSync } from 'node:fs'
import { rename, rm, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { gguf } from '@huggingface/gguf'
import { ConversionError } from '../../core/errors.js'
import { CONVERTER_DTYPES } from '../../core/options-schema.js'
import { checkPython, DEBIAN_PACKAGES, pythonCandidates, SHIM_DIR, type ConverterReadiness } from './python-env.js'
import { runTool } from './run-tool.js'

export interface ConverterOptions {
  /** config.conversion.python; null finds one. */
  python: string | null
  /** llama.cpp source tree with convert_hf_to_gguf.py; null: the runtime's, else the newest under <dataDir>/src. */
  llamaCppSrc: string | null
  /** The source tree the runtime build was made from (its build-info.json), tried after llamaCppSrc. */
  buildSource?: string | null
  dataDir: string
  /** llama-quantize of the runtime build, if any. */
  quantizePath: string | null
  timeoutMs: number
}

export interface ConvertProgress { status: string, completed?: number, total?: number }
export interface MadeVariant { dtype: string, file: string, size: number, sha256: string }

/**
 * SafeTensors → GGUF with llama.cpp's own tools: convert_hf_to_gguf.py for f32/f16/bf16/q8_0, then
 * llama-quantize for every other type (from the f16). Output goes to a temporary name and is renamed into
 * the model's folder only when the tool succeeded and the file reads as a GGUF.
 */
export class Converter {
  private readonly running = new Map<string, Promise<MadeVariant>>()
  private checked: Promise<{ python: string, shim: boolean }> | null = null

  constructor (private readonly options: ConverterOptions) {}

  private sourceTree (): string | null {
    if (this.options.llamaCppSrc) return this.options.llamaCppSrc
    if (this.options.buildSource && existsSync(join(this.options.buildSource, 'convert_hf_to_gguf.py'))) return this.options.buildSource
    const root = join(this.options.dataDir, 'src')
    if (!existsSync(root)) return null
    const trees = readdirSync(root).filter((d) => d.startsWith('llama.cpp-') && existsSync(join(root, d, 'convert_hf_to_gguf.py'))).sort().reverse()
    return trees[0] ? join(root, trees[0]) : null
  }

  async readiness (): Promise<ConverterReadiness> {
    const problems: string[] = []
    let python: string | null = null
    let shim = false
    for (const candidate of pythonCandidates(this.options.python, this.options.dataDir)) {
      const check = await checkPython(candidate)
      if (check.ok) { python = candidate; shim = check.shim; break }
      problems.push(check.error!)
    }
    const src = this.sourceTree()
    if (!src) problems.push('no llama.cpp source tree with convert_hf_to_gguf.py (set llama_cpp_src, or run npm run runtime:build)')
    if (!this.options.quantizePath) problems.push('no llama-quantize (needed for types other than f32, f16, bf16, q8_0): npm run runtime:build')
    const ready = python !== null && src !== null
    return {
      ready,
      python,
      shim,
      llamaCppSrc: src,
      quantize: this.options.quantizePath,
      problems: ready ? problems.filter((p) => p.includes('llama-quantize')) : problems,
      fix: python === null ? `install the converter's Python packages: on Debian/Ubuntu, apt-get install ${DEBIAN_PACKAGES} (or npm run setup:converter); elsewhere, a virtual environment at ${join(this.options.dataDir, 'converter-venv')} with llama.cpp's requirements/requirements-convert_hf_to_gguf.txt` : null,
    }
  }

  private async interpreter (): Promise<{ python: string, shim: boolean }> {
    this.checked ??= this.readiness().then((r) => {
      if (!r.ready || !r.python) throw new ConversionError(`SafeTensors conversion is not available: ${r.problems.join('; ')}${r.fix ? `. To fix: ${r.fix}` : ''}`, [], 503, 'converter_unavailable')
      return { python: r.python, shim: r.shim }
    })
    const result = this.checked
    result.catch(() => { this.checked = null }) // look again next time: the admin may have installed it
    return result
  }

  /** Makes the GGUF of `dtype` in `modelDir` (or returns the one there); concurrent calls share one run. */
  ensure (modelDir: string, dtype: string, opts: { signal?: AbortSignal, onProgress?: (p: ConvertProgress) => void } = {}): Promise<MadeVariant> {
    const key = `${modelDir}|${dtype}`
    let run = this.running.get(key)
    if (!run) {
      run = this.convert(modelDir, dtype, opts).finally(() => this.running.delete(key))
      this.running.set(key, run)
    }
    return run
  }

  private async convert (modelDir: string, dtype: string, opts: { signal?: AbortSignal, onProgress?: (p: ConvertProgress) => void }): Promise<MadeVariant> {
    const target = join(modelDir, `model-${dtype}.gguf`)
    if (existsSync(target)) return describe(dtype, target)
    if ((CONVERTER_DTYPES as readonly string[]).includes(dtype)) return this.convertHf(modelDir, dtype, target, opts)
    if (!this.options.quantizePath) throw new ConversionError(`quantizing to ${dtype} needs llama-quantize, and no runtime build has it: npm run runtime:build`, [], 503, 'converter_unavailable')
    const f16 = await this.ensure(modelDir, 'f16', opts)
    opts.onProgress?.({ status: `quantizing ${dtype}` })
    const temporary = `${target}.tmp-${process.pid}`
    try {
      const run = await runTool(this.options.quantizePath, [f16.file, temporary, dtype.toUpperCase()], { timeoutMs: this.options.timeoutMs, signal: opts.signal })
      await this.checkRun(run, `llama-quantize to ${dtype}`, opts.signal)
      return await this.finish(temporary, target, dtype)
    } finally {
      await rm(temporary, { force: true })
    }
  }

  private async convertHf (modelDir: string, dtype: string, target: string, opts: { signal?: AbortSignal, onProgress?: (p: ConvertProgress) => void }): Promise<MadeVariant> {
    const { python, shim } = await this.interpreter()
    const src = this.sourceTree()!
    const temporary = `${target}.tmp-${process.pid}`
    opts.onProgress?.({ status: `converting to gguf (${dtype})` })
    const paths = [...(shim ? [SHIM_DIR] : []), join(src, 'gguf-py'), process.env.PYTHONPATH ?? ''].filter(Boolean)
    try {
      const run = await runTool(python, [join(src, 'convert_hf_to_gguf.py'), modelDir, '--outfile', temporary, '--outtype', dtype], {
        env: { ...process.env, PYTHONPATH: paths.join(':'), PYTHONUNBUFFERED: '1' },
        timeoutMs: this.options.timeoutMs,
        signal: opts.signal,
        onLine: (line) => {
          // tqdm: "Writing:  45%|####      | 139k/309k"
          const match = /Writing:\s+(\d+)%/.exec(line)
          if (match) opts.onProgress?.({ status: `converting to gguf (${dtype})`, completed: Number(match[1]), total: 100 })
        },
      })
      await this.checkRun(run, `convert_hf_to_gguf.py to ${dtype}`, opts.signal)
      return await this.finish(temporary, target, dtype)
    } finally {
      await rm(temporary, { force: true })
    }
  }

  private async checkRun (run: Awaited<ReturnType<typeof runTool>>, what: string, signal?: AbortSignal): Promise<void> {
    if (run.aborted) throw signal?.reason ?? new ConversionError(`${what} was cancelled`)
    if (run.spawnError) throw new ConversionError(`${what} could not start: ${run.spawnError}`, [], 503, 'converter_unavailable')
    if (run.timedOut) throw new ConversionError(`${what} ran past the time limit (conversion.timeout ${Math.round(this.options.timeoutMs / 1000)} s) and was stopped`, run.tail)
    if (run.exitCode !== 0) {
      const reasons = run.tail.filter((l) => /error|exception|not supported|no such|missing|failed|invalid/i.test(l)).slice(-3)
      throw new ConversionError(`${what} failed (exit ${run.exitCode}): ${(reasons.length > 0 ? reasons : run.tail.slice(-3)).join(' | ')}`, run.tail)
    }
  }

  private async finish (temporary: string, target: string, dtype: string): Promise<MadeVariant> {
    try {
      await gguf(temporary, { allowLocalFile: true })
    } catch (err) {
      throw new ConversionError(`the ${dtype} output is not a valid GGUF: ${(err as Error).message}`)
    }
    await rename(temporary, target)
    return describe(dtype, target)
  }
}

async function describe (dtype: string, file: string): Promise<MadeVariant> {
  const hash = createHash('sha256')
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer)
  return { dtype, file, size: (await stat(file)).size, sha256: hash.digest('hex') }
}
