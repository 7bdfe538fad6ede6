import { constants } from 'node:fs'
import { access, readdir, stat, statfs } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import type { Config } from '../config.js'
import type { ConverterReadiness } from '../../plugins/convert/python-env.js'
import type { RuntimesDescription } from '../../runtimes/registry.js'
import type { Device, RuntimeBuild } from '../../runtimes/types.js'
import { formatBytes } from './human.js'

/** One finding: `ok` ✓, `warn` !, `fail` ✗; `fix` says what to run or change (null when nothing is to do). */
export interface Check {
  name: string
  status: 'ok' | 'warn' | 'fail'
  message: string
  fix: string | null
}

/** Under this much free room a warning: a small model at 4 bits is about 1 GiB, a 7B one 4 GiB. */
const LOW_ROOM_BYTES = 4 * 1024 ** 3

const SOURCES: Record<RuntimeBuild['source'], string> = { config: 'named in config', path: 'on PATH', built: 'built by npm run runtime:build' }

const ok = (name: string, message: string): Check => ({ name, status: 'ok', message, fix: null })
const warn = (name: string, message: string, fix: string | null = null): Check => ({ name, status: 'warn', message, fix })
const fail = (name: string, message: string, fix: string): Check => ({ name, status: 'fail', message, fix })

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

/** Whether SafeTensors conversion can run (GET /api/convert/status's answer). */
export function conversionCheck (readiness: ConverterReadiness): Check {
  if (!readiness.ready) return fail('conversion', `not ready: ${readiness.problems.join('; ')}`, readiness.fix ?? 'npm run setup:converter')
  const how = `python ${readiness.python}${readiness.shim ? ' with the compatibility runner' : ''}, llama.cpp source ${readiness.llamaCppSrc}`
  if (readiness.quantize === null) return warn('conversion', `ready for f32, f16, bf16 and q8_0 only, no llama-quantize (${how})`, readiness.fix)
  return ok('conversion', `ready (${how}, llama-quantize ${readiness.quantize})`)
}

export interface ModelsFolder {
  dir: string
  exists: boolean
  writable: boolean
  /** Why it cannot be written, when it cannot. */
  error: string | null
  models: number
  /** Free bytes on its file system (the nearest folder that exists), null when that cannot be read. */
  freeBytes: number | null
}

/** The models folder without touching it: whether serve can write there, what it holds, and the room left. */
export async function inspectModelsFolder (dir: string): Promise<ModelsFolder> {
  const folder: ModelsFolder = { dir, exists: false, writable: false, error: null, models: 0, freeBytes: null }
  // The folder, or the nearest folder above it that exists: serve makes the rest.
  let existing = dir
  for (;;) {
    const info = await stat(existing).catch((err: NodeJS.ErrnoException) => err)
    if (!(info instanceof Error)) {
      if (!info.isDirectory()) { folder.error = `${existing} is not a folder`; return folder }
      break
    }
    // ENOTDIR: something above is a file, which the walk up then finds and names.
    if ((info.code !== 'ENOENT' && info.code !== 'ENOTDIR') || dirname(existing) === existing) { folder.error = `${existing}: ${info.code ?? info.message}`; return folder }
    existing = dirname(existing)
  }
  folder.exists = existing === dir
  try {
    await access(existing, constants.W_OK | constants.X_OK)
    folder.writable = true
  } catch (err) {
    folder.error = `${existing} cannot be written (${(err as NodeJS.ErrnoException).code})`
  }
  const fs = await statfs(existing).catch(() => null)
  folder.freeBytes = fs === null ? null : fs.bavail * fs.bsize
  if (folder.exists) folder.models = await countModels(dir)
  return folder
}

/** Folders `<owner>/<name>` holding a manifest, as the store lists them (dot-folders are its own). */
async function countModels (dir: string): Promise<number> {
  let count = 0
  for (const owner of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
    if (!owner.isDirectory() || owner.name.startsWith('.')) continue
    for (const model of await readdir(join(dir, owner.name), { withFileTypes: true }).catch(() => [])) {
      if (model.isDirectory() && await stat(join(dir, owner.name, model.name, 'manifest.json')).then(() => true, () => false)) count++
    }
  }
  return count
}

export function modelsCheck (folder: ModelsFolder): Check {
  if (!folder.writable) {
    return fail('models', `${folder.dir} cannot be used: ${folder.error}`, 'point models_dir (config.yaml, LLAMAGATE_MODELS or --models) at a folder you can write, or fix its permissions')
  }
  const room = folder.freeBytes === null ? 'free room unknown' : `${formatBytes(folder.freeBytes)} free on its file system`
  const held = folder.exists ? `${folder.models} model${folder.models === 1 ? '' : 's'}` : 'not made yet (serve makes it)'
  const message = `${folder.dir}: ${held}, ${room}`
  if (folder.freeBytes !== null && folder.freeBytes < LOW_ROOM_BYTES) return warn('models', message, 'free some room, or point models_dir at a larger disk')
  return ok('models', message)
}
