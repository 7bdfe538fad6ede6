import { spawn, type ChildProcess } from 'node:child_process'
import { Writable } from 'node:stream'
import { existsSync } from 'node:fs'
import { readdir, readFile } from 'node:fs/promises'
import { randomUUID } from 'node:crypto'
import { join } from 'node:path'
import { GATEWAY_NODE_FLAGS } from '../../core/base/node-flags.js'
import { PACKAGE_ROOT } from '../../core/base/paths.js'
import { childEnv, userEnv } from './child-env.js'

export const CLI = join(PACKAGE_ROOT, 'dist/core/cli/cli.js')

export interface ServeProcess {
  child: ChildProcess
  /** `http://127.0.0.1:<port>` once listening. */
  address: string
  /** Marks this process and everything it starts (an environment variable children inherit). */
  mark: string
  output: () => string
  /** Resolves with the exit code and signal. */
  exited: Promise<{ code: number | null, signal: NodeJS.Signals | null }>
}

/**
 * Starts `llamagate serve` as a real process (the built CLI) and waits for its listening line. It sees only
 * `env` besides PATH and HOME (test/helpers/child-env.ts): none of the caller's LLAMAGATE_* or HF_* settings.
 * `wrapper`: a command line the gateway's is appended to (it must exec it).
 */
export async function startServe (args: string[], env: NodeJS.ProcessEnv = {}, timeoutMs = 30_000, wrapper: string[] = []): Promise<ServeProcess> {
  const mark = randomUUID()
  // `wrapper`: a command that runs the gateway's (unshare and a script that sets up a machine for it).
  return await listening([...wrapper, process.execPath, ...GATEWAY_NODE_FLAGS, CLI, 'serve', ...args], childEnv({ ...env, LLAMAGATE_TEST_MARK: mark }), mark, timeoutMs)
}

/**
 * `llamagate serve` run by another Node than the suite's (`node`: its program), in the environment a user would start
 * it from (userEnv: none of the test runner's hooks, which are built for the suite's Node).
 */
export async function startServeWith (node: string, args: string[], env: NodeJS.ProcessEnv = {}, timeoutMs = 30_000): Promise<ServeProcess> {
  const mark = randomUUID()
  return await listening([node, ...GATEWAY_NODE_FLAGS, CLI, 'serve', ...args], userEnv({ ...env, LLAMAGATE_TEST_MARK: mark }), mark, timeoutMs)
}

/** Starts `command` (a gateway's) and waits for its listening line. */
async function listening (command: string[], env: NodeJS.ProcessEnv, mark: string, timeoutMs: number): Promise<ServeProcess> {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run "npm run build" first (npm test does)`)
  const child = spawn(command[0]!, command.slice(1), { env, stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout!.on('data', (d) => { output += d })
  child.stderr!.on('data', (d) => { output += d })
  const exited = new Promise<{ code: number | null, signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }))
  })
  const address = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve did not start within ${timeoutMs} ms:\n${output}`)), timeoutMs)
    const check = (): void => {
      const match = /listening on (http:\/\/[^\s"]+)/.exec(output)
      if (match) { clearTimeout(timer); resolve(match[1]!) }
    }
    child.stdout!.on('data', check)
    child.stderr!.on('data', check)
    exited.then(({ code }) => { clearTimeout(timer); reject(new Error(`serve exited with ${code} before listening:\n${output}`)) })
  })
  return { child, address, mark, output: () => output, exited }
}

/** Runs `llamagate <args>` to completion, with the same clean environment as startServe. */
export async function runCli (args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null, stdout: string, stderr: string }> {
  return await ran(process.execPath, args, childEnv(env))
}

/** Runs `llamagate <args>` to completion on another Node (`node`), in the environment of startServeWith. */
export async function runCliWith (node: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null, stdout: string, stderr: string }> {
  return await ran(node, args, userEnv(env))
}

async function ran (node: string, args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null, stdout: string, stderr: string }> {
  const child = spawn(node, [CLI, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (d) => { stdout += d })
  child.stderr.on('data', (d) => { stderr += d })
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
  return { code, stdout, stderr }
}

/** Pids of live processes that carry the mark in their environment (a process and all it started). */
export async function processesWithMark (mark: string): Promise<number[]> {
  const found: number[] = []
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const environ = await readFile(`/proc/${entry}/environ`, 'latin1')
      const stat = await readFile(`/proc/${entry}/stat`, 'latin1')
      // A zombie has exited already; it only waits for its parent to collect it.
      if (environ.includes(`LLAMAGATE_TEST_MARK=${mark}`) && !/\) Z /.test(stat)) found.push(Number(entry))
    } catch {
      // The process ended while we looked, or is not ours to read.
    }
  }
  return found
}

/**
 * `llamagate <args>` run in this process (core/cli/cli.ts's main with its output captured): what the program does with
 * its arguments, without the ~1 s a process of its own costs to start. For what depends on the process itself (its
 * environment, its exit, a lock between two programs) a test runs the program: runCli.
 */
export async function runCliHere (args: string[]): Promise<{ code: number, stdout: string, stderr: string }> {
  const { main } = await import('../../core/cli/cli.js')
  const stdout = new TextSink()
  const stderr = new TextSink()
  const code = await main(args, { stdout: stdout as unknown as NodeJS.WriteStream, stderr: stderr as unknown as NodeJS.WriteStream })
  return { code, stdout: stdout.text, stderr: stderr.text }
}

class TextSink extends Writable {
  text = ''
  override _write (chunk: Buffer | string, _encoding: BufferEncoding, done: (err?: Error | null) => void): void {
    this.text += chunk.toString()
    done()
  }
}
