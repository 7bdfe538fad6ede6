import { cpus, freemem, totalmem } from 'node:os'
import type { BackendModule } from './types.js'

/** The CPU is always there; its memory is the machine's (libuv reports MemAvailable as free). */
export const cpu: BackendModule = {
  backend: 'cpu',
  async detect () {
    return [{ backend: 'cpu', index: 0, name: `${cpus().length} cores, ${cpus()[0]?.model ?? 'unknown CPU'}`, totalBytes: totalmem(), freeBytes: freemem() }]
  },
}
