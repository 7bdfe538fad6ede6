import type { Logger } from '../core/base/logger.js'
import { BUILTIN_RUNTIMES, type RuntimeKind } from '../core/config/runtime-kinds.js'
import { cpu } from './cpu.js'
import { cuda } from './cuda.js'
import { metal } from './metal.js'
import { runProbe } from './probe.js'
import { rocm } from './rocm.js'
import type { BackendModule, Device, RuntimeKindModule } from './types.js'
import { vulkan } from './vulkan.js'

const BUILTIN_MODULES: Record<(typeof BUILTIN_RUNTIMES)[number], BackendModule> = { cuda, rocm, metal, vulkan, cpu }
const NO_LAUNCH = { flags: [], env: {} } as const

/** How long a plugin kind's `detect` or `binDirs` may take: past it the kind counts as absent, and the log says so. */
export const PLUGIN_KIND_TIMEOUT_MS = 10_000

/**
 * The runtime kinds, best first under `runtime: auto`: the built-ins' (cuda, rocm, metal, vulkan, cpu), each
 * plugin's kind placed just before the built-in its `before` names (vulkan by default), in the plugins' order.
 * A plugin kind that throws, answers garbage or hangs has no devices and no folders; the log says why, once per reason.
 */
export function kindModules (pluginKinds: readonly RuntimeKind[], log?: Pick<Logger, 'warn'>, timeoutMs = PLUGIN_KIND_TIMEOUT_MS): RuntimeKindModule[] {
  const order: RuntimeKindModule[] = BUILTIN_RUNTIMES.map((name) => ({ ...BUILTIN_MODULES[name], binDirs: async () => [], launch: NO_LAUNCH }))
  for (const kind of pluginKinds) {
    const before = order.findIndex((m) => m.backend === (kind.before ?? 'vulkan'))
    order.splice(before, 0, pluginModule(kind, timeoutMs, log))
  }
  return order
}

function pluginModule (kind: RuntimeKind, timeoutMs: number, log?: Pick<Logger, 'warn'>): RuntimeKindModule {
  let lastWarning: string | null = null
  const absent = <T>(fallback: T) => (err: unknown): T => {
    const message = (err as Error)?.message ?? String(err)
    if (message !== lastWarning) log?.warn({ runtime: kind.name }, `runtime kind ${kind.name} counts as absent: ${message}`)
    lastWarning = message
    return fallback
  }
  const probe = (env: NodeJS.ProcessEnv) => (command: string, args: readonly string[]) => runProbe(command, [...args], env)
  return {
    backend: kind.name,
    detect: (env) => bounded(Promise.resolve().then(() => kind.detect({ env, probe: probe(env) })), timeoutMs, 'detect')
      .then((devices) => devices.map((d, i): Device => ({ backend: kind.name, index: d.index ?? i, name: d.name, totalBytes: d.totalBytes, freeBytes: d.freeBytes })))
      .catch(absent<Device[]>([])),
    binDirs: async (env) => kind.binDirs === undefined
      ? []
      : await bounded(Promise.resolve().then(() => kind.binDirs!(env)), timeoutMs, 'binDirs').catch(absent<readonly string[]>([])),
    launch: { flags: kind.flags ?? [], env: kind.env ?? {} },
  }
}

/** `work`, or a rejection naming the bound once `timeoutMs` has passed. */
function bounded<T> (work: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const late = `its ${what} did not answer in ${timeoutMs / 1000} s`
  const timeout = new Promise<never>((_resolve, reject) => { timer = setTimeout(() => reject(new Error(late)), timeoutMs) })
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer))
}
