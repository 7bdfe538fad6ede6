import { cpus, freemem, totalmem } from 'node:os'
import type { BackendModule } from './types.js'

// os.cpus() parses /proc/cpuinfo and /proc/stat, ~0.4 ms here; the scheduler asks for free memory before
// every load, on the cold start's path, and the processors do not change while the gateway runs.
let cpuName: string | null = null

/** The CPU is always there; its memory is the machine's (libuv reports MemAvailable as free). */
export const cpu: BackendModule = {
  backend: 'cpu',
  async detect () {
    if (cpuName === null) {
      const all = cpus()
      cpuName = `${all.length} cores, ${all[0]?.model ?? 'unknown CPU'}`
    }
    return [{ backend: 'cpu', index: 0, name: cpuName, totalBytes: totalmem(), freeBytes: freemem() }]
  },
}
