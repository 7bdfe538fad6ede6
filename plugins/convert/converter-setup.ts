import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { execa } from 'execa'
import { APT_COMMAND, DEBIAN_PACKAGES } from './python-env.js'
import { runTool } from './run-tool.js'

export type Say = (line: string) => void

/** How what the converter lacks can be installed here without asking anyone. */
export type SetupRoute = 'apt' | 'venv'

/** What the machine allows: root with Debian's apt-get, a Python package index. Injectable for tests. */
export interface SetupHost {
  root: boolean
  aptGet: boolean
  /** Whether a Python package index answers (PIP_INDEX_URL, else PyPI), within a few seconds. */
  indexReachable: () => Promise<boolean>
}

export const LOCAL_HOST: SetupHost = {
  root: process.getuid?.() === 0,
  aptGet: existsSync('/usr/bin/apt-get') && existsSync('/etc/debian_version'),
  indexReachable: packageIndexReachable,
}

/** The route for a start's automatic step: Debian's packages as root, else a venv where an index answers; or why neither. */
export async function automaticRoute (host: SetupHost, requirements: string): Promise<{ route: SetupRoute } | { route: null, why: string }> {
  if (host.root && host.aptGet) return { route: 'apt' }
  if (existsSync(requirements) && await host.indexReachable()) return { route: 'venv' }
  const index = process.env.PIP_INDEX_URL ?? 'https://pypi.org/simple/'
  const apt = host.aptGet ? 'not running as root (apt-get needs it)' : 'no apt-get (not Debian/Ubuntu)'
  return { route: null, why: `${apt}, and no Python package index answers (${index}) for a virtual environment` }
}

export interface StepOptions {
  /** The llama.cpp tree whose requirements the virtual environment installs. */
  llamaCppSrc: string
  dataDir: string
  say: Say
  signal?: AbortSignal
}

/** Where llamagate's own virtual environment for the converter lives (pythonCandidates tries it first). */
export function converterVenv (dataDir: string): string {
  return join(dataDir, 'converter-venv')
}

/** llama.cpp's requirements for convert_hf_to_gguf.py in a tree. */
export function requirementsOf (llamaCppSrc: string): string {
  return join(llamaCppSrc, 'requirements', 'requirements-convert_hf_to_gguf.txt')
}

/**
 * Installs Debian's packages with apt-get, each output line to `say`. Never killed once started, the
 * signal only stops the wait: a dpkg cut off mid-install leaves the system's packages half-configured.
 * @returns whether apt-get exited 0
 */
export async function aptStep (opts: Pick<StepOptions, 'say' | 'signal'>): Promise<boolean> {
  opts.say(`installing Debian packages: ${DEBIAN_PACKAGES.join(' ')}`)
  const child = execa('sh', ['-c', `apt-get update -q && ${APT_COMMAND} -q`], {
    reject: false, detached: true, stdin: 'ignore', buffer: false, all: true,
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  })
  child.unref()
  child.all?.setEncoding('utf8')
  let pending = ''
  child.all?.on('data', (chunk: string) => {
    const lines = (pending + chunk).split(/\r\n|\r|\n/)
    pending = lines.pop()!
    for (const line of lines) if (line.trim() !== '') opts.say(line.trim())
  })
  const stopped = new Promise<'stopped'>((resolve) => opts.signal?.addEventListener('abort', () => resolve('stopped'), { once: true }))
  const result = await Promise.race([child, stopped])
  if (result === 'stopped') return false
  if (result.exitCode !== 0) opts.say(`apt-get failed (${result.exitCode === undefined ? result.shortMessage : `exit ${result.exitCode}`})`)
  return result.exitCode === 0
}

/**
 * A virtual environment at `<dataDir>/converter-venv` with llama.cpp's converter requirements, pip's lines to
 * `say`; the signal kills it (the environment is llamagate's own: a half-made one fails the import check and
 * is made again).
 * @returns whether pip exited 0
 */
export async function venvStep (opts: StepOptions): Promise<boolean> {
  const venv = converterVenv(opts.dataDir)
  const requirements = requirementsOf(opts.llamaCppSrc)
  opts.say(`creating a virtual environment at ${venv} with ${requirements}`)
  const run = { timeoutMs: 1_800_000, onLine: opts.say, ...(opts.signal ? { signal: opts.signal } : {}) }
  const made = await runTool('python3', ['-m', 'venv', venv], run)
  const pip = made.exitCode === 0
    ? await runTool(join(venv, 'bin', 'pip'), ['install', '--disable-pip-version-check', '--progress-bar', 'off', '-r', requirements], { ...run, cwd: join(opts.llamaCppSrc, 'requirements') })
    : made
  if (pip.exitCode !== 0) opts.say(`the virtual environment could not be set up (${pip.spawnError ?? `exit ${pip.exitCode}`})`)
  return pip.exitCode === 0
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
