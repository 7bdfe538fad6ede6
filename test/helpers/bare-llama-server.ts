import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { freePort } from '../../runtimes/process/free-port.js'
import { cpuRuntime } from './runtime.js'

/**
 * The test runtime's llama-server on `model`, outside any gateway, on a loopback port (one thread, no warm-up, no
 * fit, a small context, then `extraArgs`): `use` gets its address and its log so far once it listens, and it is
 * killed after.
 */
export async function withBareServer<T> (model: string, extraArgs: string[], use: (server: { base: string, log: () => string }) => Promise<T>): Promise<T> {
  const runtime = await cpuRuntime()
  const port = await freePort()
  const child = spawn(runtime.serverPath, ['--model', model, '--host', '127.0.0.1', '--port', String(port), '--threads', '1', '--no-warmup', '--ctx-size', '256', '--fit', 'off', ...extraArgs], { stdio: ['ignore', 'pipe', 'pipe'] })
  let log = ''
  try {
    await new Promise<void>((resolve, reject) => {
      const read = (chunk: Buffer): void => { log += chunk.toString(); if (/server is listening|listening on/.test(log)) resolve() }
      child.stdout.on('data', read)
      child.stderr.on('data', read)
      child.once('exit', (code) => reject(new Error(`llama-server exited (${String(code)}) before listening:\n${log.slice(-2000)}`)))
    })
    return await use({ base: `http://127.0.0.1:${port}`, log: () => log })
  } finally {
    child.kill('SIGKILL')
    await once(child, 'exit').catch(() => {})
  }
}
