// A llama.cpp build kind of one's own: SYCL, for Intel GPUs (Arc, Data Center GPU Max, Core Ultra's). The gateway
// runs `detect` at start and before each load, looks for its llama-server in config.yaml's `runtimes.sycl.bin`, then
// in `binDirs`; under `runtime: auto` it prefers it to Vulkan (which sees the same GPUs) and starts each llama-server
// of it with its flags and variables. `runtime: sycl` forces it.
import { definePlugin, type RuntimeDevice, type RuntimeKind } from 'llamagate/plugin'

// `sycl-ls` lists each device on a line; a Level Zero GPU's reads
// `[level_zero:gpu][level_zero:0] Intel(R) oneAPI Unified Runtime over Level-Zero, Intel(R) Arc(TM) A770 Graphics 12.55.8 [1.3.29735]`.
const LEVEL_ZERO_GPU = /^\[level_zero:gpu\]\[level_zero:(\d+)\] [^,]*, (.+?) [\d.]+ \[[^\]]*\]\s*$/gm

/** The Level Zero GPUs of a `sycl-ls` listing. It does not tell memory: 0 (unknown), as Vulkan's probe. */
export function parseSyclLs (listing: string): RuntimeDevice[] {
  return [...listing.matchAll(LEVEL_ZERO_GPU)].map((m) => ({ index: Number(m[1]), name: m[2]!, totalBytes: 0, freeBytes: 0 }))
}

const sycl: RuntimeKind = {
  name: 'sycl',
  before: 'vulkan',
  async detect ({ probe }) {
    const listing = await probe('sycl-ls', [])
    return listing === null ? [] : parseSyclLs(listing)
  },
  // Where a SYCL build of llama.cpp is unpacked: the folder LLAMA_SYCL_BIN names, else /opt's.
  binDirs: (env) => [env.LLAMA_SYCL_BIN ?? '/opt/llama.cpp-sycl/bin'],
  // One GPU per model: an integrated GPU beside a discrete one would hold a split back to its pace.
  flags: ['--split-mode', 'none', '--main-gpu', '0'],
  // Level Zero's free-memory query, and compiled kernels kept between starts.
  env: { ZES_ENABLE_SYSMAN: '1', SYCL_CACHE_PERSISTENT: '1' },
}

export default definePlugin({
  name: 'sycl-runtime',
  manifest: { runtimes: [sycl] },
  // Nothing to add to the server: the runtime kind is all it brings.
  register: () => {},
})
