import { existsSync, realpathSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { execa } from 'execa'
import { loadConfig, type Config } from '../core/config.js'
import { Converter } from '../plugins/convert/converter.js'
import { APT_COMMAND, DEBIAN_PACKAGES, type ConverterReadiness } from '../plugins/convert/python-env.js'
import { RuntimeRegistry } from '../runtimes/registry.js'

export type Say = (line: string) => void

export interface SetupOptions {
  /** Only report: exit status 0 when ready, 1 when not, with what to install. @default false */
  check?: boolean
  /**
   * Non-interactive (CI): no virtual environment unless `venv` is set; Debian packages through apt when
   * root; failure when not ready at the end. @default false
   */
  ci?: boolean
  /** Try the virtual environment (needs a Python package index). @default true, false with `ci` */
  venv?: boolean
  /** Install Debian's packages with apt-get when root. @default true */
  apt?: boolean
}

/** The converter as the gateway would set it up: the chosen runtime's llama-quantize and source tree. */
export async function converterFor (config: Config): Promise<Converter> {
  const registry = await RuntimeRegistry.create({ config })
  const build = registry.chosen?.quantizePath ? registry.chosen : registry.builds.find((b) => b.quantizePath) ?? null
  let buildSource: string | null = null
  if (build) {
    try { buildSource = (JSON.parse(await readFile(join(build.binDir, '..', 'build-info.json'), 'utf8')) as { source?: string }).source ?? null } catch { /* not built by llamagate */ }
  }
  return new Converter({ python: config.conversion.python, llamaCppSrc: config.llamaCppSrc, buildSource, dataDir: config.dataDir, quantizePath: build?.quantizePath ?? null, timeoutMs: config.conversion.timeoutMs })
}

/** Human lines for a readiness: what runs, what is papered over, or what to install. */
export function describeReadiness (r: ConverterReadiness): string[] {
  if (!r.ready) return [`conversion is NOT ready: ${r.problems.join('; ')}`, `to fix: ${r.fix}`]
  const lines = [`conversion is ready: ${r.python}, llama.cpp converter at ${r.llamaCppSrc}`]
  if (r.shim) lines.push(`compatibility runner in use (scripts/converter-shim), standing in for: ${r.papered.join(', ')}`)
  lines.push(r.quantize ? `llama-quantize: ${r.quantize}` : `no llama-quantize: only f32, f16, bf16, q8_0 (${r.fix})`)
  return lines
}

/** Whether a Python package index answers (PIP_INDEX_URL, else PyPI), within a few seconds. */
async function packageIndexReachable (): Promise<boolean> {
  const index = process.env.PIP_INDEX_URL ?? 'https://pypi.org/simple/'
  try {
    const res = await fetch(new URL('pip/', index.endsWith('/') ? index : `${index}/`), { signal: AbortSignal.timeout(5000) })
    return res.ok
  } catch {
    return false
  }
}

/**
 * Makes SafeTensors conversion ready. With a Python package index: a virtual environment at
 * `<data_dir>/converter-venv` with llama.cpp's requirements/requirements-convert_hf_to_gguf.txt. Without one
 * (offline Debian): Debian's packages through apt-get when root, else the command to run.
 * @returns the readiness at the end
 */
export async function setupConverter (config: Config, opts: SetupOptions, say: Say): Promise<ConverterReadiness> {
  const converter = await converterFor(config)
  let readiness = await converter.readiness({ fresh: true })
  if (opts.check || readiness.ready) return readiness
  const src = readiness.llamaCppSrc
  if (!src) return readiness // nothing to install Python for: the fix says how to get a tree
  const requirements = join(src, 'requirements', 'requirements-convert_hf_to_gguf.txt')
  const venv = join(config.dataDir, 'converter-venv')
  if ((opts.venv ?? !opts.ci) && existsSync(requirements)) {
    if (await packageIndexReachable()) {
      say(`creating a virtual environment at ${venv} with ${requirements}`)
      const made = await execa('python3', ['-m', 'venv', venv], { reject: false, stdout: 'inherit', stderr: 'inherit' })
      const pip = made.exitCode === 0
        ? await execa(join(venv, 'bin', 'pip'), ['install', '--disable-pip-version-check', '-r', requirements], { reject: false, cwd: join(src, 'requirements'), timeout: 1_800_000, stdout: 'inherit', stderr: 'inherit' })
        : made
      if (pip.exitCode !== 0) say(`the virtual environment could not be set up (exit ${pip.exitCode})`)
      readiness = await converter.readiness({ fresh: true })
      if (readiness.ready) return readiness
    } else {
      say('no Python package index reachable: skipping the virtual environment')
    }
  }
  if (opts.apt !== false && existsSync('/usr/bin/apt-get')) {
    if (process.getuid?.() === 0) {
      say(`installing Debian packages: ${DEBIAN_PACKAGES.join(' ')}`)
      const apt = await execa('sh', ['-c', `apt-get update -qq && ${APT_COMMAND} -qq`], { reject: false, env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }, stdout: 'inherit', stderr: 'inherit' })
      if (apt.exitCode !== 0) say(`apt-get failed (exit ${apt.exitCode})`)
      readiness = await converter.readiness({ fresh: true })
    } else {
      say(`not root: run this, then this script again:\n  sudo sh -c 'apt-get update && ${APT_COMMAND}'`)
    }
  }
  return readiness
}

function parseArgs (argv: string[]): SetupOptions {
  const opts: SetupOptions = {}
  for (const arg of argv) {
    if (arg === '--check') opts.check = true
    else if (arg === '--ci') opts.ci = true
    else if (arg === '--venv') opts.venv = true
    else if (arg === '--no-venv') opts.venv = false
    else if (arg === '--no-apt') opts.apt = false
    else throw new Error(`unknown argument ${arg}: expected --check, --ci, --venv, --no-venv, --no-apt`)
  }
  return opts
}

/** `npm run setup:converter [-- --check | --ci]` */
async function main (): Promise<void> {
  const opts = parseArgs(process.argv.slice(2))
  const say: Say = (line) => process.stdout.write(`[converter] ${line}\n`)
  const readiness = await setupConverter(loadConfig(), opts, say)
  for (const line of describeReadiness(readiness)) say(line)
  if (!readiness.ready) process.exitCode = 1
}

if (process.argv[1] && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) {
  main().catch((err) => { process.stderr.write(`[converter] ${(err as Error).message}\n`); process.exit(1) })
}
