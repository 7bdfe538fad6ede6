import { runProbe } from './probe.js'
import type { BackendModule, Device } from './types.js'

/** AMD GPUs, from `rocm-smi --showmeminfo vram --json` (bytes). */
export const rocm: BackendModule = {
  backend: 'rocm',
  async detect (env) {
    const out = await runProbe('rocm-smi', ['--showmeminfo', 'vram', '--showproductname', '--json'], env)
    if (out === null) return []
    try {
      const cards = JSON.parse(out) as Record<string, Record<string, string>>
      const devices: Device[] = []
      for (const [key, card] of Object.entries(cards)) {
        const index = /^card(\d+)$/.exec(key)?.[1]
        if (index === undefined) continue
        const total = Number(card['VRAM Total Memory (B)'])
        const used = Number(card['VRAM Total Used Memory (B)'])
        if (!Number.isFinite(total)) continue
        devices.push({ backend: 'rocm', index: Number(index), name: card['Card series'] ?? card['Card SKU'] ?? key, totalBytes: total, freeBytes: Number.isFinite(used) ? total - used : total })
      }
      return devices
    } catch {
      return []
    }
  },
}
