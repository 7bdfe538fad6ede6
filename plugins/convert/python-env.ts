import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { execa } from 'execa'
import { PACKAGE_ROOT } from '../../core/base/paths.js'

/** plugins/convert/converter-shim/run_converter.py: runs the converter with stand-ins for what Debian 12 lacks. */
export const SHIM_RUNNER = join(PACKAGE_ROOT, 'plugins', 'convert', 'converter-shim', 'run_converter.py')

/** What the converter needs from Debian/Ubuntu when no Python package index is reachable. */
export const DEBIAN_PACKAGES = ['python3-numpy', 'python3-torch', 'python3-sentencepiece', 'python3-tqdm', 'python3-yaml'] as const
export const APT_COMMAND = `apt-get install -y --no-install-recommends ${DEBIAN_PACKAGES.join(' ')}`

/** Whether SafeTensors conversion can run here, and if not, what to install. */
export interface ConverterReadiness {
  ready: boolean
  /** The interpreter that passed the import check. */
  python: string | null
  /** True when the interpreter lacks transformers or torch's newer dtypes and the compatibility runner stands in. */
  shim: boolean
  /** What the runner stands in for (`transformers`, `torch.float8_e4m3fn`, ...); empty without the shim. */
  papered: string[]
  /** The llama.cpp tree whose convert_hf_to_gguf.py runs. */
  llamaCppSrc: string | null
  /** llama-quantize, needed for every type but f32, f16, bf16 and q8_0. */
  quantize: string | null
  problems: string[]
  /** What to run or install; null when nothing is missing. */
  fix: string | null
}

/** The interpreters tried, in order: the configured one only; else llamagate's venv, Debian's, PATH's. */
export function pythonCandidates (configured: string | null, dataDir: string): string[] {
  if (configured) return [configured]
  const venv = join(dataDir, 'converter-venv', 'bin', 'python')
  // /usr/bin/python3 before PATH's: apt installs the packages for the system interpreter, and a pyenv or
  // conda python3 earlier on PATH would not see them.
  return [venv, '/usr/bin/python3', 'python3'].filter((p) => !p.startsWith('/') || existsSync(p))
}

export type PythonCheck =
  | { ok: true, papered: string[], versions: string }
  | { ok: false, error: string }

/**
 * Imports the converter (without converting) through the runner's --probe: the same imports a conversion
 * does, so "ready" means the converter really starts. Takes ~1.3 s (torch's import).
 */
export async function checkPython (python: string, converterScript: string): Promise<PythonCheck> {
  const result = await execa(python, [SHIM_RUNNER, '--probe', converterScript], { reject: false, timeout: 60_000, stdin: 'ignore' })
  if (result.failed && result.exitCode === undefined) {
    const reason = (result as { code?: string }).code === 'ENOENT' ? 'not found' : (result.timedOut ? 'timed out' : result.shortMessage)
    return { ok: false, error: `${python}: ${reason}` }
  }
  const line = result.stdout.trim().split('\n').at(-1) ?? ''
  let probe: { ok: boolean, missing?: string | null, error?: string, papered?: string[], python?: string, torch?: string, numpy?: string }
  try {
    probe = JSON.parse(line)
  } catch {
    return { ok: false, error: `${python}: the import check failed (exit ${result.exitCode}): ${result.stderr.trim().split('\n').at(-1) ?? ''}` }
  }
  if (!probe.ok) return { ok: false, error: probe.missing ? `${python} lacks the Python module ${probe.missing}` : `${python}: the converter does not import: ${probe.error}` }
  return { ok: true, papered: probe.papered ?? [], versions: `Python ${probe.python}, torch ${probe.torch}, numpy ${probe.numpy}` }
}

/** The Python modules DEBIAN_PACKAGES provide, one each in the same order. */
export const CONVERTER_MODULES = ['numpy', 'torch', 'sentencepiece', 'tqdm', 'yaml'] as const

/**
 * Which of CONVERTER_MODULES `python` cannot find, without importing any (~50 ms, not the ~1.3 s of
 * checkPython's import of torch): the check every start can afford. null when the interpreter does not run.
 */
export async function missingModules (python: string): Promise<string[] | null> {
  const code = `import importlib.util as u, json; print(json.dumps([m for m in ${JSON.stringify(CONVERTER_MODULES)} if u.find_spec(m) is None]))`
  const result = await execa(python, ['-c', code], { reject: false, timeout: 30_000, stdin: 'ignore' })
  if (result.exitCode !== 0) return null
  try {
    return JSON.parse(result.stdout.trim().split('\n').at(-1) ?? '') as string[]
  } catch {
    return null
  }
}
