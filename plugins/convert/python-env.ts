import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { execa } from 'execa'
import { PACKAGE_ROOT } from '../../core/paths.js'

export const SHIM_DIR = join(PACKAGE_ROOT, 'scripts', 'converter-shim')
export const DEBIAN_PACKAGES = 'python3-numpy python3-torch python3-sentencepiece python3-tqdm python3-yaml'

/** Whether the converter can run, and if not, what to install. */
export interface ConverterReadiness {
  ready: boolean
  python: string | null
  /** True when `transformers` is missing and the compatibility shim is used. */
  shim: boolean
  llamaCppSrc: string | null
  quantize: string | null
  problems: string[]
  fix: string | null
}

/** The interpreter to use: the configured one, else llamagate's venv, else Debian's, else python3 on PATH. */
export function pythonCandidates (configured: string | null, dataDir: string): string[] {
  if (configured) return [configured]
  return [join(dataDir, 'converter-venv', 'bin', 'python'), '/usr/bin/python3', 'python3'].filter((p) => !p.startsWith('/') || existsSync(p))
}

/**
 * Checks an interpreter by importing what convert_hf_to_gguf.py imports. `transformers` missing is fine:
 * the shim stands in (see scripts/converter-shim/README.md).
 */
export async function checkPython (python: string): Promise<{ ok: boolean, shim: boolean, error: string | null }> {
  const probe = 'import importlib.util as u, sys\nmissing=[m for m in ("numpy","torch","sentencepiece") if u.find_spec(m) is None]\nprint("missing:"+",".join(missing))\nprint("transformers:"+str(u.find_spec("transformers") is not None))'
  const result = await execa(python, ['-c', probe], { reject: false, timeout: 30_000 })
  if (result.exitCode !== 0) return { ok: false, shim: false, error: `${python} did not run: ${(result.stderr || (result as { shortMessage?: string }).shortMessage || '').toString().trim().split('\n').at(-1)}` }
  const missing = /missing:(.*)/.exec(result.stdout)?.[1]?.split(',').filter(Boolean) ?? []
  const hasTransformers = /transformers:True/.test(result.stdout)
  if (missing.length > 0) return { ok: false, shim: false, error: `${python} lacks ${missing.join(', ')}` }
  return { ok: true, shim: !hasTransformers, error: null }
}
