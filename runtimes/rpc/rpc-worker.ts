import type { ChildProcessWithoutNullStreams } from 'node:child_process'
import type { Server } from 'node:net'
import { freePort } from '../process/free-port.js'
import { withEnv } from '../process/env-command.js'
import { killGroup } from '../process/kill-group.js'
import { outputLines } from '../process/output-lines.js'
import { SpareShell } from '../process/spare-shell.js'
import type { RuntimeBuild } from '../types.js'
import { WATCHDOG } from '../process/watchdog.js'
import { startMemoryCapRelay } from './rpc-memory-cap.js'

export interface RpcWorkerOptions {
  build: RuntimeBuild
  host: string
  port: number
  /** Caps the memory each device reports (bytes): this worker's share of a model. @default what the devices have */
  memBytes?: number
  /** Devices to serve (`CUDA0,CUDA1`), as `llama-server --list-devices` names them. @default the GPUs, else the CPU */
  device?: string
  /** CPU threads. @default rpc-server's (half the cores) */
  threads?: number
  /** Variables it starts with over this process's environment (its runtime kind's). @default none */
  env?: Readonly<Record<string, string>>
  /** Each line the worker prints. */
  onLine: (line: string) => void
}

/**
 * The watchdog, and SIGPIPE ignored (inherited through exec): rpc-server writes without MSG_NOSIGNAL, so a client
 * that hangs up before its answer (a crashed llama-server, a probe that gave up) would kill it; ignored, the write
 * fails and the worker serves the next client.
 */
const WORKER_SCRIPT = WATCHDOG.replace('exec "$@"', 'trap "" PIPE\nexec "$@"')

/** Why llama.cpp's RPC worker must not face an open network, for the terminal and the docs. */
export const RPC_EXPOSURE_WARNING = 'the RPC protocol has no authentication: anyone who can reach this port can use this machine\'s devices and memory, and llama.cpp calls it unsafe on open networks. Use it only on a private network, a VPN or an SSH tunnel, with the same llama.cpp build on every host'

export interface RunningRpcWorker {
  /** Where llama-server reaches it. */
  readonly address: string
  readonly pid: number | undefined
  /** Resolves with the worker's exit status once it is gone. */
  readonly exited: Promise<number>
  stop(): Promise<void>
}

/**
 * Starts llama.cpp's RPC worker with a runtime build, under the same watchdog as llama-server (it goes when this
 * process goes, even by SIGKILL). With a memory cap, the worker listens on a private loopback port behind a relay
 * that caps what it reports.
 * @throws Error when the build has no worker binary
 */
export async function startRpcWorker (opts: RpcWorkerOptions): Promise<RunningRpcWorker> {
  const binary = opts.build.rpcServerPath
  if (binary === null) {
    throw new Error(`the llama.cpp build in ${opts.build.binDir} has no RPC worker (ggml-rpc-server): rebuild it with "npm run runtime:build" (the recipe builds it), or build llama.cpp with -DGGML_RPC=ON`)
  }
  const inner = opts.memBytes === undefined ? { host: opts.host, port: opts.port } : { host: '127.0.0.1', port: await freePort() }
  const args = ['--host', inner.host, '--port', String(inner.port)]
  if (opts.device) args.push('--device', opts.device)
  if (opts.threads !== undefined) args.push('--threads', String(opts.threads))
  const shells = new SpareShell(WORKER_SCRIPT, 'llamagate-rpc-worker')
  const child: ChildProcessWithoutNullStreams = shells.launch(withEnv([binary, ...args], opts.env))
  child.stdin.on('error', () => {})
  const lines = outputLines(opts.onLine)
  for (const out of [child.stdout, child.stderr]) { out.setEncoding('utf8'); out.on('data', lines.push) }
  let relay: Server | null = null
  const exited = new Promise<number>((resolve) => {
    child.once('close', (code, signal) => {
      lines.flush()
      child.stdin.destroy()
      relay?.close()
      resolve(code ?? (signal ? 128 : 1))
    })
  })
  if (opts.memBytes !== undefined) {
    try {
      relay = await startMemoryCapRelay({ listen: { host: opts.host, port: opts.port }, target: inner, capBytes: opts.memBytes })
    } catch (err) {
      killGroup(child, 'SIGTERM')
      await exited
      throw new Error(`cannot listen on ${opts.host}:${opts.port}: ${(err as Error).message}`)
    }
  }
  return {
    address: `${opts.host}:${opts.port}`,
    pid: child.pid,
    exited,
    async stop () {
      killGroup(child, 'SIGTERM')
      await exited
    },
  }
}

/** Whether `host` keeps the worker to this machine (the default); anything else deserves the warning. */
export { isLoopbackHost } from '../../core/base/host-port.js'
