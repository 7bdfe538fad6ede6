import { existsSync, realpathSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import { loadBuiltinKeys } from '../../core/platform/plugin-manifests.js'
import { BUILTIN_RUNTIMES, isBuiltinRuntime } from '../../core/config/runtime-kinds.js'
import { buildRuntime } from '../../runtimes/build/build-runtime.js'
import { findToolkit, isBuildable } from '../../runtimes/build/toolkit.js'

// The build itself lives with the runtimes (the gateway also runs it, in the background, for a GPU found at start).
export { BUILD_RECIPE, RPC_SERVER, buildRuntime, cudaArchitectures, type BuildRuntimeOptions } from '../../runtimes/build/build-runtime.js'

export const USAGE = `usage: npm run runtime:build -- [--backend cpu|cuda|rocm|metal|vulkan] [--src <llama.cpp checkout>] [--jobs <n>] [--cuda-arch <90|86;89|portable>]

Builds llama-server and llama-quantize from llama.cpp source and installs them into
<data_dir>/runtimes/llama.cpp-<tag>/<backend>/bin, where llamagate finds them.
  --backend    which build (default cpu)
  --src        a llama.cpp checkout (default: $LLAMA_CPP_SRC or llama_cpp_src in config.yaml; else the pinned
               release, from <data_dir>/src, a git clone, or the bundle in the node-llama-cpp npm package)
  --jobs       parallel compile jobs (default: the number of cores)
  --cuda-arch  CUDA architectures (default: each GPU's compute capability from nvidia-smi)
  --config     the config.yaml to read data_dir from`

async function main (args: string[]): Promise<void> {
  const { values } = parseArgs({ args, options: { backend: { type: 'string', default: 'cpu' }, src: { type: 'string' }, jobs: { type: 'string' }, 'cuda-arch': { type: 'string' }, config: { type: 'string' }, help: { type: 'boolean', short: 'h' } } })
  if (values.help) { process.stdout.write(`${USAGE}\n`); return }
  const backend = values.backend
  if (!isBuiltinRuntime(backend)) throw new Error(`--backend must be one of ${BUILTIN_RUNTIMES.join(', ')}, not ${JSON.stringify(values.backend)}`)
  const jobs = values.jobs === undefined ? undefined : Number(values.jobs)
  if (jobs !== undefined && !(Number.isInteger(jobs) && jobs >= 1)) throw new Error(`--jobs must be a whole number of at least 1, not ${JSON.stringify(values.jobs)}`)
  // Its data folder and source tree only: the core's keys, so a plugin's keys or runtime kind need no plugin loaded.
  const config = loadBuiltinKeys({ config: values.config })
  // A toolkit installed off PATH (CUDA's usual /usr/local/cuda) is used where it is.
  const toolkit = isBuildable(backend) ? await findToolkit(backend, process.env) : null
  const bin = await buildRuntime({ backend, dataDir: config.dataDir, source: values.src ?? config.llamaCppSrc, jobs, cudaArch: values['cuda-arch'], ...(toolkit ? { env: toolkit.env } : {}) })
  if (!existsSync(join(bin, 'llama-server'))) throw new Error('build finished without llama-server')
}

if (process.argv[1] && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) {
  main(process.argv.slice(2)).catch((err) => { process.stderr.write(`runtime build failed: ${(err as Error).message}\n${(err as { code?: string }).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' ? `${USAGE}\n` : ''}`); process.exit(1) })
}
