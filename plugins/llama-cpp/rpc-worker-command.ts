import { UsageError, type Command } from '../../core/cli/commands/command.js'

const DEFAULT_PORT = 50052
const READY_TIMEOUT_MS = 30_000

export const rpcWorkerCommand: Command = {
  name: 'rpc-worker',
  summary: 'lend this machine\'s devices to a gateway elsewhere (a llama.cpp RPC worker)',
  usage: ['llamagate rpc-worker [--host HOST [--allow-public]] [--port PORT] [--mem MiB] [--device DEV] [--threads N] [--config FILE]'],
  flags: [
    '--host HOST      address to listen on (default 127.0.0.1; any other needs --allow-public)',
    '--allow-public   listen on a HOST that is not loopback: the RPC protocol has no authentication',
    `--port PORT      port to listen on (default ${DEFAULT_PORT})`,
    '--mem MiB        report at most this much memory per device, so that this worker gets that share of a model',
    '--device DEV     devices to serve, comma-separated, as llama-server --list-devices names them (default: the GPUs, else the CPU)',
    '--threads N      CPU threads (default: half the cores)',
    '--config FILE    config file to find the runtime build with (default: $LLAMAGATE_CONFIG, else the shipped one)',
    'A gateway uses it once config.yaml lists it under rpc.workers and names it in models.<name>.rpc.',
  ],
  options: { host: { type: 'string' }, 'allow-public': { type: 'boolean' }, port: { type: 'string' }, mem: { type: 'string' }, device: { type: 'string' }, threads: { type: 'string' }, config: { type: 'string' } },
  positionals: { min: 0, max: 0 },
  async run ({ values, stdout, stderr }) {
    const host = (values.host as string | undefined) ?? '127.0.0.1'
    const port = whole(values.port, '--port', 1, 65535) ?? DEFAULT_PORT
    const memMiB = whole(values.mem, '--mem', 1, Number.MAX_SAFE_INTEGER / 2 ** 20)
    const threads = whole(values.threads, '--threads', 1, 1024)
    // Loaded here, not at the top: the client commands must start without the server's modules.
    const [{ loadConfigAndPlugins }, { RuntimeRegistry }, { startRpcWorker, isLoopbackHost, RPC_EXPOSURE_WARNING }, { probeRpcWorker }] = await Promise.all([
      import('../../core/platform/plugin-manifests.js'), import('../../runtimes/registry.js'), import('../../runtimes/rpc/rpc-worker.js'), import('../../runtimes/rpc/rpc-probe.js'),
    ])
    // Anyone who reaches the port can run code on the worker's devices and read its memory: off loopback, only
    // when asked for in so many words.
    if (!isLoopbackHost(host) && values['allow-public'] !== true) {
      throw new UsageError(`--host ${host} is not loopback: ${RPC_EXPOSURE_WARNING}; add --allow-public to listen there anyway`)
    }
    // With the listed plugins' runtime kinds: `runtime:` may name one.
    const registry = await RuntimeRegistry.create({ config: (await loadConfigAndPlugins({ config: values.config as string | undefined })).config })
    const build = registry.chosen
    if (!build) { stderr.write(`llamagate rpc-worker: no llama.cpp runtime: ${registry.reason}\n`); return 1 }
    if (!isLoopbackHost(host)) stderr.write(`\nWARNING: listening on ${host}, not loopback: ${RPC_EXPOSURE_WARNING}.\n\n`)
    const worker = await startRpcWorker({
      build, host, port, env: registry.launchOf(build).env,
      ...(memMiB !== undefined ? { memBytes: memMiB * 2 ** 20 } : {}),
      ...(values.device ? { device: values.device as string } : {}),
      ...(threads !== undefined ? { threads } : {}),
      onLine: (line) => stderr.write(`[worker] ${line}\n`),
    })
    let stopping = false
    const stop = (): void => { if (!stopping) { stopping = true; void worker.stop() } }
    process.once('SIGTERM', stop)
    process.once('SIGINT', stop)
    // Ready when it answers as a worker does (through the relay, when there is one).
    const probeHost = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host
    const deadline = Date.now() + READY_TIMEOUT_MS
    let gone = false
    void worker.exited.then(() => { gone = true })
    for (;;) {
      if (gone) break
      const probe = await probeRpcWorker({ host: probeHost, port }, 1000)
      if (probe.state === 'ready') {
        const devices = probe.devices.map((d) => `device ${d.index}: ${Math.round(d.totalBytes / 2 ** 20)} MiB, ${Math.round(d.freeBytes / 2 ** 20)} MiB free`).join('; ')
        stdout.write(`RPC worker ready on ${worker.address} (llama.cpp ${build.version}, ${build.backend}, protocol ${probe.version}; ${devices})\n`)
        break
      }
      if (Date.now() > deadline) { stderr.write(`llamagate rpc-worker: no answer on ${worker.address} within ${READY_TIMEOUT_MS / 1000} s (${probe.state}: ${'error' in probe ? probe.error : ''})\n`); stop(); break }
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    const code = await worker.exited
    return stopping ? 0 : code === 0 ? 1 : code
  },
}

function whole (value: unknown, flag: string, min: number, max: number): number | undefined {
  if (value === undefined) return undefined
  const n = Number(value)
  if (!Number.isInteger(n) || n < min || n > max) throw new UsageError(`${flag} must be a whole number from ${min} to ${max}, not ${JSON.stringify(value)}`)
  return n
}
