import { fail, ok, warn, type Check } from '../../core/cli/commands/doctor-checks.js'
import { formatBytes } from '../../core/cli/commands/human.js'
import type { Config } from '../../core/platform/config.js'
import { isBuiltinRuntime } from '../../core/config/runtime-kinds.js'
import type { RuntimesDescription } from '../../runtimes/registry.js'
import type { GpuBuildStatus } from '../../runtimes/build/build-status.js'
import type { Device, RuntimeBuild } from '../../runtimes/types.js'
import { missingPatchCosts, PATCH_FIX } from './patch-costs.js'

const SOURCES: Record<RuntimeBuild['source'], string> = { config: 'named in config', path: 'on PATH', built: 'built by npm run runtime:build', plugin: 'found by its plugin' }

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
  if (chosen !== null) checks.push(patchCheck(chosen))
  if (runtimes.warning !== null) checks.push(warn('runtime', runtimes.warning))
  if (runtimes.build !== null) checks.push(buildCheck(runtimes.build))
  return checks
}

/** What the chosen build lacks of llamagate's patch set (runtimes/build/patches), and what that costs. */
function patchCheck (build: RuntimeBuild): Check {
  const costs = missingPatchCosts(build)
  if (costs.length === 0) return ok('patches', 'llamagate\'s patch set: cache groups, slot saves with context checkpoints, saves of the RAM prompt cache')
  return warn('patches', `this llama-server lacks llamagate's patches: ${costs.join('; ')}`, PATCH_FIX)
}

/** The GPU runtime's background build: how far it is, or why it stopped and where its output is. */
function buildCheck (build: GpuBuildStatus): Check {
  const progress = build.completed !== null && build.total !== null && build.total > 0
    ? `, ${build.completed}/${build.total} compile steps (${Math.floor(100 * build.completed / build.total)}%)`
    : ''
  switch (build.state) {
    case 'building': return warn('gpu build', `${build.backend} runtime building in the background since ${build.started_at}: ${build.step}${progress}; log: ${build.log}`)
    case 'built': return ok('gpu build', `${build.backend} runtime built at ${build.finished_at ?? build.started_at}`)
    case 'interrupted': return warn('gpu build', `${build.backend} runtime build interrupted at ${build.step}${progress}; log: ${build.log}`, 'start llamagate again: it takes the build up where it stopped')
    case 'failed': return fail('gpu build', `${build.backend} runtime build failed: ${build.error ?? 'no reason given'}; log: ${build.log}`, `read the log, fix the cause, then npm run runtime:build -- --backend ${build.backend}`)
  }
}

function describeDevice (d: Device): string {
  const memory = d.totalBytes > 0 ? ` (${formatBytes(d.totalBytes)}, ${formatBytes(d.freeBytes)} free)` : ''
  return d.backend === 'cpu' ? `CPU ${d.name}${memory}` : `${d.backend}${d.index} ${d.name}${memory}`
}

function buildFix (runtimes: RuntimesDescription): string {
  // A plugin's kind is not built here: its llama-server comes from its vendor, or from a build of the admin's.
  if (runtimes.runtime !== 'auto' && !isBuiltinRuntime(runtimes.runtime)) {
    return `name the folder holding a ${runtimes.runtime} llama-server as runtimes.${runtimes.runtime}.bin in config.yaml (its plugin's documentation says where it installs one), or set runtime: auto (config.yaml or LLAMAGATE_RUNTIME)`
  }
  if (runtimes.runtime !== 'auto') {
    const present = runtimes.devices.some((d) => d.backend === runtimes.runtime)
    return `npm run runtime:build -- --backend ${runtimes.runtime}${present ? '' : ` (on a machine with a ${runtimes.runtime} device: none was found here)`}, or set runtime: auto (config.yaml or LLAMAGATE_RUNTIME)`
  }
  const gpu = runtimes.devices.find((d) => d.backend !== 'cpu' && isBuiltinRuntime(d.backend))
  return `npm run runtime:build -- --backend ${gpu?.backend ?? 'cpu'}, or name a folder holding llama-server under runtimes in config.yaml`
}

function rejectedFix (binDir: string, config: Pick<Config, 'runtimes' | 'configFile'>): string {
  const key = Object.entries(config.runtimes).find(([, entry]) => entry?.bin === binDir)?.[0]
  if (key !== undefined) return `set runtimes.${key}.bin in ${config.configFile ?? 'config.yaml'} to a folder holding a working llama-server, or remove it`
  return 'rebuild it (npm run runtime:build), or take it off PATH'
}
