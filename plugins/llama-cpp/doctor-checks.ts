import { fail, ok, warn, type Check } from '../../core/commands/doctor-checks.js'
import { formatBytes } from '../../core/commands/human.js'
import type { Config } from '../../core/config.js'
import type { RuntimesDescription } from '../../runtimes/registry.js'
import type { Device, RuntimeBuild } from '../../runtimes/types.js'

const SOURCES: Record<RuntimeBuild['source'], string> = { config: 'named in config', path: 'on PATH', built: 'built by npm run runtime:build' }

/** The hardware, each build found (or refused), and the build chosen, as GET /api/runtimes describes them. */
export function runtimeChecks (runtimes: RuntimesDescription, config: Pick<Config, 'runtimes' | 'configFile'>): Check[] {
  const checks: Check[] = [ok('hardware', runtimes.devices.map(describeDevice).join('; ') || 'no device found')]
  for (const build of runtimes.builds) {
    checks.push(ok('build', `${build.backend}, llama.cpp ${build.version}${build.commit ? ` (${build.commit})` : ''}, ${SOURCES[build.source]}: ${build.binDir}`))
  }
  for (const rejected of runtimes.rejected) checks.push(fail('build', `${rejected.binDir} does not run: ${rejected.error}`, rejectedFix(rejected.binDir, config)))
  const { chosen } = runtimes
  if (chosen !== null) {
    checks.push(ok('runtime', `${chosen.backend} chosen (llama.cpp ${chosen.version} in ${chosen.binDir}): ${runtimes.reason}`))
  } else {
    // The registry's reason ends with how to build one; the fix names the build this hardware wants.
    checks.push(fail('runtime', `none chosen: ${runtimes.reason.split('; build one with')[0]}`, buildFix(runtimes)))
  }
  if (runtimes.warning !== null) checks.push(warn('runtime', runtimes.warning))
  return checks
}

function describeDevice (d: Device): string {
  const memory = d.totalBytes > 0 ? ` (${formatBytes(d.totalBytes)}, ${formatBytes(d.freeBytes)} free)` : ''
  return d.backend === 'cpu' ? `CPU ${d.name}${memory}` : `${d.backend}${d.index} ${d.name}${memory}`
}

function buildFix (runtimes: RuntimesDescription): string {
  if (runtimes.runtime !== 'auto') {
    const present = runtimes.devices.some((d) => d.backend === runtimes.runtime)
    return `npm run runtime:build -- --backend ${runtimes.runtime}${present ? '' : ` (on a machine with a ${runtimes.runtime} device: none was found here)`}, or set runtime: auto (config.yaml or LLAMAGATE_RUNTIME)`
  }
  const gpu = runtimes.devices.find((d) => d.backend !== 'cpu')
  return `npm run runtime:build -- --backend ${gpu?.backend ?? 'cpu'}, or name a folder holding llama-server under runtimes in config.yaml`
}

function rejectedFix (binDir: string, config: Pick<Config, 'runtimes' | 'configFile'>): string {
  const key = Object.entries(config.runtimes).find(([, entry]) => entry?.bin === binDir)?.[0]
  if (key !== undefined) return `set runtimes.${key}.bin in ${config.configFile ?? 'config.yaml'} to a folder holding a working llama-server, or remove it`
  return 'rebuild it (npm run runtime:build), or take it off PATH'
}
