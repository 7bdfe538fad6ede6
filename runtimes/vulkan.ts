import { runProbe } from './probe.js'
import type { BackendModule, Device } from './types.js'

/** Any Vulkan GPU, from `vulkaninfo --summary` (memory is not reported there: 0 means unknown). */
export const vulkan: BackendModule = {
  backend: 'vulkan',
  async detect (env) {
    const out = await runProbe('vulkaninfo', ['--summary'], env)
    return out === null ? [] : parseVulkaninfo(out)
  },
}

/** The `deviceName = …` lines of `vulkaninfo --summary`, software renderers left out (they are not GPUs). */
export function parseVulkaninfo (text: string): Device[] {
  const devices: Device[] = []
  for (const match of text.matchAll(/deviceName\s*=\s*(.+)/g)) {
    if (/llvmpipe|lavapipe|SwiftShader/i.test(match[1]!)) continue
    devices.push({ backend: 'vulkan', index: devices.length, name: match[1]!.trim(), totalBytes: 0, freeBytes: 0 })
  }
  return devices
}
