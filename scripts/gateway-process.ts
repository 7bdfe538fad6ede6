import { spawn, type ChildProcess } from 'node:child_process'
import { closeSync, openSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { GATEWAY_NODE_FLAGS } from '../core/base/node-flags.js'
import { PACKAGE_ROOT } from '../core/base/paths.js'

/**
 * Starts `llamagate serve` for a benchmark, as the bin and `npm start` start it (with the gateway's V8
 * flags), its log going to a file: a benchmark that read the log through a pipe would spend its own CPU on
 * every request line, and only while it drives llamagate. `root`: another built checkout, to compare with.
 */
export async function startGatewayProcess (config: string, logFile: string, timeoutMs = 60_000, root = PACKAGE_ROOT): Promise<{ child: ChildProcess, url: string }> {
  const log = openSync(logFile, 'a')
  const child = spawn(process.execPath, [...GATEWAY_NODE_FLAGS, ...(process.env.LLAMAGATE_BENCH_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.LLAMAGATE_BENCH_PROFILE}`] : []), join(root, 'dist/core/cli/cli.js'), 'serve', '--config', config], { env: gatewayEnv(root), stdio: ['ignore', log, 'inherit'] })
  closeSync(log)
  let exited = false
  child.once('exit', () => { exited = true })
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const text = await readFile(logFile, 'utf8')
    const match = /listening on (http:\/\/[^\s"]+)/.exec(text)
    if (match) return { child, url: match[1]! }
    if (exited || Date.now() > deadline) throw new Error(`llamagate did not start: ${text.slice(-2000)}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

/**
 * Its environment: Ollama's port left alone (a benchmark beside a running Ollama, or beside another benchmark, must
 * neither take it nor warn), unless the caller's LLAMAGATE_OLLAMA_LISTEN says otherwise. An older checkout (`root`)
 * serves no second address by default and does not know `off`.
 */
function gatewayEnv (root: string): NodeJS.ProcessEnv {
  if (root !== PACKAGE_ROOT) return process.env
  return { ...process.env, LLAMAGATE_OLLAMA_LISTEN: process.env.LLAMAGATE_OLLAMA_LISTEN ?? 'off' }
}
