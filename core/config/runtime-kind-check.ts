import { isAbsolute } from 'node:path'
import { isPlainObject } from './config-layers.js'
import { BUILTIN_RUNTIMES, isBuiltinRuntime, RUNTIME_KIND_NAME, type RuntimeDevice, type RuntimeKind } from './runtime-kinds.js'

/**
 * A plugin manifest's `runtimes`, checked for shape, with `detect` and `binDirs` naming the plugin when they throw
 * or answer something that is not a list of devices or folders.
 * @returns the kinds, or why they are malformed (a sentence the plugin's load error carries)
 */
export function checkedRuntimeKinds (plugin: string, value: unknown): RuntimeKind[] | string {
  if (value === undefined) return []
  if (!Array.isArray(value)) return 'has runtimes that are not a list'
  const kinds: RuntimeKind[] = []
  for (const kind of value as unknown[]) {
    if (!isPlainObject(kind)) return 'has a runtime kind that is not an object'
    const { name, before, detect, binDirs, flags, env } = kind
    if (typeof name !== 'string' || !RUNTIME_KIND_NAME.test(name)) return `has a runtime kind named ${JSON.stringify(name)}: a name is 2-32 of a-z 0-9 _ -, starting with a letter`
    if (isBuiltinRuntime(name)) return `has a runtime kind named "${name}", a built-in kind's name`
    if (before !== undefined && !isBuiltinRuntime(before)) return `has a runtime kind "${name}" whose before is not one of ${BUILTIN_RUNTIMES.join(', ')}`
    if (typeof detect !== 'function') return `has a runtime kind "${name}" without a detect function`
    if (binDirs !== undefined && typeof binDirs !== 'function') return `has a runtime kind "${name}" whose binDirs is not a function`
    if (flags !== undefined && !(Array.isArray(flags) && flags.every((f) => typeof f === 'string' && !f.includes('\0')))) return `has a runtime kind "${name}" whose flags are not a list of strings`
    if (env !== undefined && !(isPlainObject(env) && Object.entries(env).every(([k, v]) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(k) && typeof v === 'string' && !v.includes('\0')))) {
      return `has a runtime kind "${name}" whose env is not a map of variable names to strings`
    }
    const said = (what: string): string => `plugin ${plugin}'s runtime kind "${name}": ${what}`
    kinds.push({
      name,
      ...(before !== undefined ? { before: before as RuntimeKind['before'] } : {}),
      detect: async (context) => {
        let devices: unknown
        try {
          devices = await (detect as RuntimeKind['detect'])(context)
        } catch (err) { throw new Error(said(`detect threw: ${(err as Error)?.message ?? String(err)}`), { cause: err }) }
        if (!Array.isArray(devices) || !devices.every(isDevice)) throw new Error(said('detect gave something other than a list of devices ({name, totalBytes, freeBytes})'))
        return devices
      },
      ...(binDirs !== undefined
        ? {
            binDirs: async (processEnv: NodeJS.ProcessEnv) => {
              let dirs: unknown
              try {
                dirs = await (binDirs as NonNullable<RuntimeKind['binDirs']>)(processEnv)
              } catch (err) { throw new Error(said(`binDirs threw: ${(err as Error)?.message ?? String(err)}`), { cause: err }) }
              if (!Array.isArray(dirs) || !dirs.every((d) => typeof d === 'string' && isAbsolute(d))) throw new Error(said('binDirs gave something other than a list of absolute folder paths'))
              return dirs as string[]
            },
          }
        : {}),
      flags: [...(flags as string[] | undefined) ?? []],
      env: { ...(env as Record<string, string> | undefined) },
    })
  }
  return kinds
}

function isDevice (d: unknown): d is RuntimeDevice {
  if (!isPlainObject(d)) return false
  const bytes = (n: unknown): boolean => typeof n === 'number' && Number.isFinite(n) && n >= 0
  return typeof d.name === 'string' && bytes(d.totalBytes) && bytes(d.freeBytes) && (d.index === undefined || (Number.isInteger(d.index) && (d.index as number) >= 0))
}
