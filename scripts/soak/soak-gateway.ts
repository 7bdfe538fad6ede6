import { spawn, type ChildProcess } from 'node:child_process'
import { closeSync, openSync } from 'node:fs'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { GATEWAY_NODE_FLAGS } from '../../core/base/node-flags.js'
import { PACKAGE_ROOT } from '../../core/base/paths.js'
import { UPSTREAM_LIMITS, upstreamConfig, type RunningUpstream } from './soak-hostile-upstream.js'
import { http, markedProcesses, type MarkedProcess } from './soak-probes.js'
import { LONG_MODEL, NUM_CTX, NUM_PARALLEL, PROMPT_CACHE, type SoakSettings } from './soak-settings.js'

// The gateway under soak as a user runs it: the built CLI with its config file, models imported before the start
// and pulled after it, then SIGTERM, and the processes it leaves.

const CLI = join(PACKAGE_ROOT, 'dist/core/cli/cli.js')

/** The folders and files of a soak run under its temporary folder. */
export interface SoakPaths { dir: string, dataDir: string, modelsDir: string, logFile: string, keysFile: string, config: string }

export function soakPaths (dir: string): SoakPaths {
  const dataDir = join(dir, 'data')
  return { dir, dataDir, modelsDir: join(dataDir, 'models'), logFile: join(dir, 'gateway.log'), keysFile: join(dataDir, 'keys.yaml'), config: join(dir, 'llamagate.yaml') }
}

export interface ConfigInput { paths: SoakPaths, settings: SoakSettings, runtimeBin: string, hubUrl: string, upstream: RunningUpstream | null }

export async function writeGatewayConfig ({ paths, settings, runtimeBin, hubUrl, upstream }: ConfigInput): Promise<void> {
  const { hostile, hostileLimitMs } = settings
  await writeFile(paths.config, [
    `data_dir: ${paths.dataDir}`, 'host: 127.0.0.1', 'port: 0', 'ollama_listen: off', 'log_level: info', 'keep_alive: 5m',
    `runtimes:\n  cpu: { bin: ${runtimeBin} }`, 'runtime: cpu',
    // 2 cores: one thread per llama-server, or the instances and the clients fight over them.
    `default_options: { num_ctx: ${NUM_CTX}, num_parallel: ${NUM_PARALLEL}, num_thread: 1, max_tokens: 32 }`,
    `limits: { max_loaded_models: ${settings.maxLoaded}, queue_length: 64, load_timeout: 30s${hostile ? `, body_timeout: ${hostileLimitMs / 1000}s, stream_stall_timeout: ${hostileLimitMs / 1000}s, header_timeout: ${hostileLimitMs / 1000}s, ${Object.entries(UPSTREAM_LIMITS).map(([k, v]) => `${k}: ${v}`).join(', ')}` : ''} }`,
    `hub: { endpoint: "${hubUrl}" }`,
    'conversion: { timeout: 5m }',
    // The keys file (the hostile soak's with its attackers' two), the soak's own requests under ops.
    `auth: { keys_file: ${paths.keysFile} }`,
    // Hostile: saves of the chat models' short slots, in a budget of a few, so that every swap saves and sweeps.
    ...(hostile ? [`models:\n  "${LONG_MODEL}": { options: { num_ctx: 8192, num_parallel: 2 } }`, upstreamConfig(upstream!), `prompt_cache: { min_tokens: ${PROMPT_CACHE.min_tokens}, size: ${PROMPT_CACHE.size} }`] : []),
  ].join('\n') + '\n')
}

/** `llamagate import` of soak/beta (and, hostile, the long model) from `files`, before the gateway starts. */
export async function importModels (paths: SoakPaths, files: string, hostile: boolean, env: NodeJS.ProcessEnv): Promise<void> {
  for (const [name, file] of [['soak/beta', 'beta.gguf'], ...(hostile ? [[LONG_MODEL, 'long.gguf']] : [])] as const) {
    const imported = spawn(...plainNode([CLI, 'import', name, join(files, file), '--config', paths.config]), { env, stdio: ['ignore', 'ignore', 'inherit'] })
    const importCode = await new Promise<number | null>((resolve) => imported.once('exit', resolve))
    if (importCode !== 0) throw new Error(`llamagate import of ${name} exited with ${importCode}`)
  }
}

/**
 * Node with `args`, as a user starts it: without the loader and coverage a test runner may have put in
 * NODE_OPTIONS (tap's, which also re-adds them to every spawn of a process it watches, so that removing them
 * from `env` is not enough: `env -u` takes them out after that, and execs node under the same pid). Under
 * tap, the gateway otherwise runs a loader thread of its own, with its memory and descriptors.
 */
function plainNode (args: string[]): [string, string[]] {
  return ['/usr/bin/env', ['-u', 'NODE_OPTIONS', '-u', 'NODE_V8_COVERAGE', process.execPath, ...args]]
}

export interface RunningGateway {
  child: ChildProcess
  url: string
  /** Resolves when it exits, however. */
  exited: Promise<{ code: number | null, signal: string | null }>
}

export async function startGateway (paths: SoakPaths, env: NodeJS.ProcessEnv): Promise<RunningGateway> {
  const log = openSync(paths.logFile, 'a')
  const child = spawn(...plainNode([...GATEWAY_NODE_FLAGS, CLI, 'serve', '--config', paths.config]), { env, stdio: ['ignore', log, log] })
  closeSync(log)
  let exited = false
  child.once('exit', () => { exited = true })
  const deadline = Date.now() + 60_000
  for (;;) {
    const text = await readFile(paths.logFile, 'utf8')
    const match = /listening on (http:\/\/[^\s"]+)/.exec(text)
    if (match) {
      return { child, url: match[1]!, exited: new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal }))) }
    }
    if (exited || Date.now() > deadline) throw new Error(`llamagate did not start: ${text.slice(-2000)}`)
    await sleep(50)
  }
}

/** Pulls `names` from the hub through the gateway, whole, one after the other. */
export async function pullModels (base: string, names: string[]): Promise<void> {
  for (const name of names) {
    const res = await http(`${base}/api/pull`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: name, stream: false }) })
    if (res.status !== 200) throw new Error(`pull of ${name} failed: ${res.status} ${await res.text()}`)
  }
}

export interface GatewayStop {
  exit: { code: number | null, signal: string | null, ms: number, killed: boolean }
  /** The marked processes alive the moment it exited, and those still there 2 s on (left behind). */
  leftAtExit: MarkedProcess[]
  left: MarkedProcess[]
}

/** Stops the gateway as a user would (SIGTERM, SIGKILL after 30 s), then looks for anything it left. */
export async function stopGateway (gateway: RunningGateway, mark: string): Promise<GatewayStop> {
  gateway.child.kill('SIGTERM')
  const stopT0 = Date.now()
  const exit = await Promise.race([gateway.exited, sleep(30_000).then(() => null)])
  if (exit === null) gateway.child.kill('SIGKILL')
  const exitInfo = exit ?? await gateway.exited
  const stopMs = Date.now() - stopT0
  const leftAtExit = await markedProcesses(mark)
  // What is still there 2 s on is left behind; looked at every 100 ms, so that a clean exit is not waited out.
  let left = leftAtExit
  for (const until = Date.now() + 2000; left.length > 0 && Date.now() < until;) {
    await sleep(100)
    left = await markedProcesses(mark)
  }
  return { exit: { code: exitInfo.code, signal: exitInfo.signal, ms: stopMs, killed: exit === null }, leftAtExit, left }
}
