import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, realpathSync } from 'node:fs'
import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import { loadConfig } from '../../core/platform/config.js'
import { freePort } from '../../runtimes/process/free-port.js'
import { healthStatus } from '../../runtimes/process/health-probe.js'
import { RuntimeRegistry } from '../../runtimes/registry.js'
import { probeRpcWorker } from '../../runtimes/rpc/rpc-probe.js'
import { findOrFetchSource } from './llama-cpp-source.js'
import { writeRealisticModel } from '../fixtures/realistic-model.js'
import { percentile } from '../stats.js'

// The cost of llama.cpp's RPC hop: one model served by llama-server alone, and by llama-server with its layers split
// across two RPC workers on loopback, asked the same thing in turn (side by side, so that a noisy machine weighs on
// both alike). Prints prompt and generation tokens/s, medians, and the ratio RPC / local.

const USAGE = `usage: npm run bench:rpc -- [--rounds N] [--tokens N] [--threads N] [--layers N] [--embd N]
  --rounds   requests per side (default 5)
  --tokens   tokens generated per request (default 128)
  --threads  CPU threads of llama-server and of each worker (default 1)
  --layers, --embd  the random-weight model's shape (default 12 layers, 512 wide: about 230 MB in F16)`

interface Timings { prompt_n: number, prompt_per_second: number, predicted_n: number, predicted_per_second: number }

async function main (): Promise<void> {
  const { values } = parseArgs({ options: { rounds: { type: 'string', default: '5' }, tokens: { type: 'string', default: '128' }, threads: { type: 'string', default: '1' }, layers: { type: 'string', default: '12' }, embd: { type: 'string', default: '512' }, help: { type: 'boolean' } } })
  if (values.help) { process.stdout.write(`${USAGE}\n`); return }
  const [rounds, tokens, threads, layers, embd] = [values.rounds, values.tokens, values.threads, values.layers, values.embd].map(Number) as [number, number, number, number, number]
  const config = loadConfig({})
  const registry = await RuntimeRegistry.create({ config })
  const build = registry.chosen
  if (!build?.features.rpc || !build.rpcServerPath) throw new Error(`the runtime (${build?.binDir ?? 'none'}) has no RPC backend or worker: npm run runtime:build`)
  const { dir: src } = await findOrFetchSource(config.dataDir, config.llamaCppSrc, () => {})
  const benchDir = join(config.dataDir, 'bench')
  await mkdir(benchDir, { recursive: true })
  const model = join(benchDir, `rpc-qwen2-${layers}x${embd}.gguf`)
  if (!existsSync(model)) {
    process.stdout.write(`writing a ${layers}-layer, ${embd}-wide random-weight model (qwen2 vocabulary)...\n`)
    await writeRealisticModel({ file: model, llamaCppSrc: src, nLayer: layers, nEmbd: embd, nHead: 8, nHeadKv: 2, nFf: embd * 3, name: 'rpc bench' })
  }
  const children: ChildProcess[] = []
  process.on('exit', () => { for (const c of children) c.kill('SIGKILL') })
  const start = (bin: string, args: string[]): ChildProcess => {
    const child = spawn(bin, args, { stdio: 'ignore' })
    children.push(child)
    return child
  }
  const workers = [await freePort(), await freePort()]
  for (const port of workers) start(build.rpcServerPath, ['--port', String(port), '--threads', String(threads)])
  for (const port of workers) await waitFor(`worker ${port}`, async () => (await probeRpcWorker({ host: '127.0.0.1', port }, 500)).state === 'ready')
  const common = ['-m', model, '-c', '2048', '-np', '1', '-t', String(threads), '--no-webui']
  const local = await freePort()
  const split = await freePort()
  start(build.serverPath, [...common, '--port', String(local)])
  start(build.serverPath, [...common, '--port', String(split), '--rpc', workers.map((p) => `127.0.0.1:${p}`).join(',')])
  for (const port of [local, split]) await waitFor(`llama-server ${port}`, async () => await healthStatus({ port }, 1000) === 200)

  const prompt = 'Tell me everything about the history of the printing press, in detail. '.repeat(12)
  const ask = async (port: number, seed: number): Promise<Timings> => {
    const res = await fetch(`http://127.0.0.1:${port}/completion`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ prompt: `${seed} ${prompt}`, n_predict: tokens, temperature: 0, ignore_eos: true, cache_prompt: false }) })
    if (!res.ok) throw new Error(`llama-server on ${port}: ${res.status} ${await res.text()}`)
    return (await res.json() as { timings: Timings }).timings
  }
  await ask(local, 0)
  await ask(split, 0) // warm both
  const seen: Record<'local' | 'rpc', Timings[]> = { local: [], rpc: [] }
  for (let round = 1; round <= rounds; round++) {
    // Alternating which goes first, so that neither always follows the other.
    const order: Array<['local' | 'rpc', number]> = round % 2 ? [['local', local], ['rpc', split]] : [['rpc', split], ['local', local]]
    for (const [side, port] of order) seen[side].push(await ask(port, round))
  }
  const median = (side: 'local' | 'rpc', key: 'prompt_per_second' | 'predicted_per_second'): number => percentile(seen[side].map((t) => t[key]), 50)
  const row = (label: string, key: 'prompt_per_second' | 'predicted_per_second'): string =>
    `${label.padEnd(22)} ${median('local', key).toFixed(1).padStart(10)} ${median('rpc', key).toFixed(1).padStart(10)} ${(median('rpc', key) / median('local', key)).toFixed(2).padStart(8)}`
  process.stdout.write(`\nllama.cpp ${build.version} ${build.backend}; model ${layers} layers x ${embd} (${model}); ${rounds} rounds, ${seen.local[0]!.prompt_n} prompt tokens, ${tokens} generated, ${threads} thread(s) each\n`)
  process.stdout.write(`${'median tokens/s'.padEnd(22)} ${'local'.padStart(10)} ${'2 workers'.padStart(10)} ${'ratio'.padStart(8)}\n`)
  process.stdout.write(`${row('prompt (prefill)', 'prompt_per_second')}\n${row('generation', 'predicted_per_second')}\n`)
  for (const c of children) c.kill('SIGTERM')
}

async function waitFor (what: string, check: () => Promise<boolean>, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    try { if (await check()) return } catch { /* not yet */ }
    if (Date.now() > deadline) throw new Error(`${what} not ready within ${timeoutMs / 1000} s`)
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) {
  main().then(() => process.exit(0), (err: Error) => { process.stderr.write(`bench:rpc failed: ${err.message}\n`); process.exit(1) })
}
