// A stand-in gateway for the watchdog test: starts one llama-server through the supervisor, prints its pid
// as one JSON line, then waits to be killed. Arguments: <bin dir> <model.gguf>.
import { inspectBuild } from '../../../runtimes/inspect-build.js'
import { LlamaServer } from '../../../runtimes/process/llama-server.js'

const [binDir, modelPath] = process.argv.slice(2) as [string, string]
const build = await inspectBuild(binDir, 'config', 'cpu')
if ('error' in build) throw new Error(build.error)
const server = new LlamaServer({ build, modelPath, alias: 'acme/held', ctxSize: 256, parallel: 1, threads: 1 })
await server.start()
process.stdout.write(`${JSON.stringify({ pid: server.pid, port: server.port })}\n`)
setInterval(() => {}, 60_000)
