import { totalmem, freemem } from 'node:os'
import type { BackendModule } from './types.js'

/** Apple Silicon: the GPU shares the machine's memory. */
export const metal: BackendModule = {
  backend: 'metal',
  async detect () {
    if (process.platform !== 'darwin' || process.arch !== 'arm64') return []
    return [{ backend: 'metal', index: 0, name: 'Apple Silicon GPU', totalBytes: totalmem(), freeBytes: freemem() }]
  },
}
