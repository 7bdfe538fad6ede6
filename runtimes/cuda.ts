import { runProbe } from './probe.js'
import type { BackendModule, Device } from './types.js'

const MIB = 1024 * 1024

/** NVIDIA GPUs, as `nvidia-smi` lists them (memory in MiB). */
export const cuda: BackendModule = {
  backend: 'cuda',
  async detect (env) {
    const out = await runProbe('nvidia-smi', ['--query-gpu=index,name,memory.total,memory.free', '--format=csv,noheader,nounits'], env)
    return out === null ? [] : parseNvidiaSmi(out)
  },
}

export function parseNvidiaSmi (text: string): Device[] {
  const devices: Device[] = []
  for (const line of text.split('\n')) {
    const fields = line.split(',').map((f) => f.trim())
    if (fields.length < 4) continue
    const [index, name, total, free] = fields as [string, string, string, string]
    if (!/^\d+$/.test(index) || !/^\d+$/.test(total) || !/^\d+$/.test(free)) continue
    devices.push({ backend: 'cuda', index: Number(index), name, totalBytes: Number(total) * MIB, freeBytes: Number(free) * MIB })
  }
  return devices
}
