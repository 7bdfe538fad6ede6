import { runProbe } from './probe.js'
import type { BackendModule, Device } from './types.js'

/**
 * AMD GPUs: `rocm-smi --json` gives names and VRAM in bytes; where only `rocminfo` is installed, the GPU
 * agents it lists are reported with unknown memory (0), so that a ROCm build is still chosen for them.
 */
export const rocm: BackendModule = {
  backend: 'rocm',
  async detect (env) {
    const smi = await runProbe('rocm-smi', ['--showmeminfo', 'vram', '--showproductname', '--json'], env)
    const devices = smi === null ? [] : parseRocmSmi(smi)
    if (devices.length > 0) return devices
    const info = await runProbe('rocminfo', [], env)
    return info === null ? [] : parseRocminfo(info)
  },
}

/** Reads `rocm-smi --showmeminfo vram --showproductname --json`: `{ "card0": { "VRAM Total Memory (B)": "…", … } }`. */
export function parseRocmSmi (text: string): Device[] {
  let cards: Record<string, Record<string, string>>
  try {
    cards = JSON.parse(text) as Record<string, Record<string, string>>
  } catch {
    return []
  }
  const devices: Device[] = []
  for (const [key, card] of Object.entries(cards ?? {})) {
    const index = /^card(\d+)$/.exec(key)?.[1]
    if (index === undefined || typeof card !== 'object' || card === null) continue
    const total = Number(card['VRAM Total Memory (B)'])
    const used = Number(card['VRAM Total Used Memory (B)'])
    if (!Number.isFinite(total) || total <= 0) continue
    devices.push({ backend: 'rocm', index: Number(index), name: card['Card series'] ?? card['Card SKU'] ?? key, totalBytes: total, freeBytes: Number.isFinite(used) ? total - used : total })
  }
  return devices
}

/** Reads `rocminfo`'s agent list: the agents of `Device Type: GPU`, named by their marketing name. */
function parseRocminfo (text: string): Device[] {
  const devices: Device[] = []
  for (const agent of text.split(/\n\*{5,}\s*\n\s*Agent \d+\s*\n\*{5,}/).slice(1)) {
    if (!/^\s*Device Type:\s*GPU\s*$/m.test(agent)) continue
    const name = /^\s*Marketing Name:\s*(.+?)\s*$/m.exec(agent)?.[1] ?? /^\s*Name:\s*(\S+)/m.exec(agent)?.[1] ?? 'AMD GPU'
    devices.push({ backend: 'rocm', index: devices.length, name, totalBytes: 0, freeBytes: 0 })
  }
  return devices
}
