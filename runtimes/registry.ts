import { existsSync, readdirSync } from 'node:fs'
import { delimiter, join } from 'node:path'
import type { Config } from '../core/platform/config.js'
import type { Logger } from '../core/base/logger.js'
import { BUILTIN_RUNTIMES, isBuiltinRuntime } from '../core/config/runtime-kinds.js'
import { inspectBuild } from './inspect-build.js'
import { kindModules } from './kind-modules.js'
import type { Backend, Device, RuntimeBuild, RuntimeKindModule } from './types.js'
import type { GpuBuildStatus } from './build/build-status.js'

/** What the registry reads of the configuration (`runtimeKinds`: the plugins' kinds, none when left out). */
export type RuntimeSettings = Pick<Config, 'runtime' | 'runtimes' | 'dataDir'> & Partial<Pick<Config, 'runtimeKinds'>>

/** Where the build script installs runtimes: `<dataDir>/runtimes/llama.cpp-<tag>/<backend>/bin`. */
export function builtRuntimesDir (dataDir: string): string {
  return join(dataDir, 'runtimes')
}

/**
 * The hardware found and the llama.cpp builds found, and the build chosen for them with the reason. Builds
 * come from config.yaml first, then `llama-server` on PATH, then the ones the build script made.
 */
export class RuntimeRegistry {
  private found: { builds: RuntimeBuild[], rejected: Array<{ binDir: string, error: string }> }
  private choice: { chosen: RuntimeBuild | null, reason: string, warning: string | null }

  private constructor (
    private readonly config: RuntimeSettings,
    /** Every runtime kind, best first. */
    private readonly kinds: RuntimeKindModule[],
    found: RuntimeRegistry['found'],
    private readonly startDevices: Device[],
    private readonly env: NodeJS.ProcessEnv,
    private readonly log?: Pick<Logger, 'info' | 'warn'>,
  ) {
    this.found = found
    this.choice = choose(config.runtime, startDevices, found.builds, this.kindNames)
  }

  /**
   * `warnNow`: log the choice's warning at once; false where the caller has a better line to log in its place
   * (the GPU build's, which knows whether the toolkit is there). @default true
   */
  static async create (opts: { config: RuntimeSettings, log?: Pick<Logger, 'info' | 'warn'>, env?: NodeJS.ProcessEnv, warnNow?: boolean }): Promise<RuntimeRegistry> {
    const { config, log } = opts
    const env = opts.env ?? process.env
    const kinds = kindModules(config.runtimeKinds ?? [], log)
    const [devices, found] = await Promise.all([detectDevices(kinds, env), findBuilds(config, kinds, env)])
    const registry = new RuntimeRegistry(config, kinds, found, devices, env, log)
    registry.report(opts.warnNow ?? true)
    return registry
  }

  /** The `runtime` setting: `auto`, or the backend forced in config. */
  get runtime (): Config['runtime'] { return this.config.runtime }
  /** The devices found at start. */
  get devices (): Device[] { return this.startDevices }
  get builds (): RuntimeBuild[] { return this.found.builds }
  get rejected (): Array<{ binDir: string, error: string }> { return this.found.rejected }
  /** The build new llama-servers start from; it changes when refresh() finds a better one. */
  get chosen (): RuntimeBuild | null { return this.choice.chosen }
  get reason (): string { return this.choice.reason }
  get warning (): string | null { return this.choice.warning }
  /** The runtime kinds, best first under `runtime: auto`: the built-ins' and the plugins'. */
  get kindNames (): string[] { return this.kinds.map((k) => k.backend) }

  /** What every llama-server of `build` starts with besides its options: its kind's flags and variables (a plugin kind's). */
  launchOf (build: RuntimeBuild): RuntimeKindModule['launch'] {
    return this.kind(build.backend).launch
  }

  private kind (backend: Backend): RuntimeKindModule {
    return this.kinds.find((k) => k.backend === backend) ?? this.kinds.find((k) => k.backend === 'cpu')!
  }

  /**
   * Looks for builds again and chooses again (the devices stay those found at start): after a build made while
   * the gateway runs, the llama-servers started from then on use it; those running keep their build.
   */
  async refresh (): Promise<void> {
    this.found = await findBuilds(this.config, this.kinds, this.env)
    this.choice = choose(this.config.runtime, this.startDevices, this.found.builds, this.kindNames)
    this.report(false)
  }

  /** The environment the probes and builds run with (PATH finds nvidia-smi, nvcc, cmake). */
  get probeEnv (): NodeJS.ProcessEnv { return this.env }

  private report (warning: boolean): void {
    for (const r of this.found.rejected) this.log?.warn({ bin: r.binDir, error: r.error }, 'ignoring a llama.cpp build that does not run')
    if (warning && this.choice.warning) this.log?.warn(this.choice.warning)
  }

  /** Bytes free for models right now: the chosen GPU backend's free memory, or the machine's. */
  async freeMemory (): Promise<number> {
    const devices = await this.kind(this.chosen?.backend ?? 'cpu').detect(this.env)
    const free = devices.reduce((sum, d) => sum + d.freeBytes, 0)
    // Vulkan (and ROCm through rocminfo) do not report memory; then only the model count limits loads.
    return free > 0 ? free : Number.MAX_SAFE_INTEGER
  }

  /** The devices as they are now (free memory changes; the list found at start does not). */
  detectDevices (): Promise<Device[]> {
    return detectDevices(this.kinds, this.env)
  }

  /** The llama-quantize to use (the conversion needs it): the chosen build's, else any build's. */
  get quantizePath (): string | null {
    return this.chosen?.quantizePath ?? this.builds.find((b) => b.quantizePath)?.quantizePath ?? null
  }

  /** One line for the start-up log: `runtime: cpu (llama.cpp 0.5.0-dev de3ff81, built) — no GPU found`. */
  summary (): string {
    if (!this.chosen) return `runtime: none — ${this.reason}`
    const c = this.chosen
    return `runtime: ${c.backend} (llama.cpp ${c.version}${c.commit ? ` ${c.commit}` : ''}, ${c.source}) — ${this.reason}`
  }

  /**
   * The body of GET /api/runtimes (its schema: plugins/system-api/runtimes-schemas.ts). `gpuBuild`: the GPU runtime
   * being built in the background, if any, and its line, which says more than the registry's own warning.
   */
  describe (devices: Device[] = this.devices, gpuBuild: { status: GpuBuildStatus | null, warning: string | null } = { status: null, warning: null }): RuntimesDescription {
    return {
      runtime: this.runtime,
      chosen: this.chosen,
      reason: this.reason,
      warning: gpuBuild.warning ?? this.warning,
      quantize: { available: this.quantizePath !== null, path: this.quantizePath },
      rpc: { available: this.chosen?.features.rpc === true, serverPath: this.chosen?.rpcServerPath ?? null },
      devices,
      builds: this.builds,
      rejected: this.rejected,
      build: gpuBuild.status,
    }
  }
}

/** What GET /api/runtimes answers. */
export interface RuntimesDescription {
  /** The `runtime` setting: `auto`, or the backend forced in config. */
  runtime: Config['runtime']
  chosen: RuntimeBuild | null
  reason: string
  warning: string | null
  quantize: { available: boolean, path: string | null }
  /** llama-server takes --rpc; serverPath: the worker binary beside it, if built. */
  rpc: { available: boolean, serverPath: string | null }
  devices: Device[]
  builds: RuntimeBuild[]
  rejected: Array<{ binDir: string, error: string }>
  /** The GPU runtime built in the background (or whose build failed), null when there is none. */
  build: GpuBuildStatus | null
}

function detectDevices (kinds: readonly RuntimeKindModule[], env: NodeJS.ProcessEnv): Promise<Device[]> {
  return Promise.all(kinds.map((k) => k.detect(env))).then((lists) => lists.flat())
}

async function findBuilds (config: RuntimeSettings, kinds: readonly RuntimeKindModule[], env: NodeJS.ProcessEnv): Promise<{ builds: RuntimeBuild[], rejected: Array<{ binDir: string, error: string }> }> {
  const candidates: Array<{ binDir: string, source: RuntimeBuild['source'], backend: Backend | null }> = []
  for (const { backend } of kinds) {
    const entry = config.runtimes[backend]
    if (entry) candidates.push({ binDir: entry.bin, source: 'config', backend })
  }
  // A plugin kind's own folders (its vendor's install), each named by the kind: its --list-devices may say nothing we know.
  for (const kind of kinds) {
    // Guesses, unlike config.yaml's folders: one without a llama-server is passed over, not reported.
    for (const binDir of await kind.binDirs(env)) {
      if (existsSync(join(binDir, 'llama-server'))) candidates.push({ binDir, source: 'plugin', backend: kind.backend })
    }
  }
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (dir && existsSync(join(dir, 'llama-server'))) { candidates.push({ binDir: dir, source: 'path', backend: null }); break }
  }
  const root = builtRuntimesDir(config.dataDir)
  // Newest llama.cpp first (the folder names carry the version tag: v0.10.0 is newer than v0.9.0).
  const versions = existsSync(root) ? readdirSync(root).filter((v) => v.startsWith('llama.cpp-')).sort((a, b) => b.localeCompare(a, 'en', { numeric: true })) : []
  for (const version of versions) {
    for (const { backend } of kinds) {
      const binDir = join(root, version, backend, 'bin')
      if (existsSync(join(binDir, 'llama-server'))) candidates.push({ binDir, source: 'built', backend })
    }
  }
  const builds: RuntimeBuild[] = []
  const rejected: Array<{ binDir: string, error: string }> = []
  for (const candidate of candidates) {
    const result = await inspectBuild(candidate.binDir, candidate.source, candidate.backend, env)
    if ('error' in result) rejected.push({ binDir: candidate.binDir, error: result.error })
    else builds.push(result)
  }
  return { builds, rejected }
}

const HOW_TO_BUILD = 'build one with "npm run runtime:build -- --backend <cuda|rocm|metal|cpu>", or name one under runtimes in config.yaml'

/** How to get a build of `kind`: a built-in's is built here; a plugin's comes from its vendor, named in config.yaml. */
function buildOf (kind: string): string {
  return isBuiltinRuntime(kind) ? `npm run runtime:build -- --backend ${kind}` : `name the folder holding its llama-server as runtimes.${kind}.bin in config.yaml`
}

/**
 * The best build whose hardware is present, or the forced one. `preference`: the kinds, best first (a plugin's among
 * the built-ins'). Exported for tests.
 */
export function choose (forced: Config['runtime'], devices: Device[], builds: RuntimeBuild[], preference: readonly string[] = BUILTIN_RUNTIMES): { chosen: RuntimeBuild | null, reason: string, warning: string | null } {
  const present = new Set(devices.map((d) => d.backend))
  if (forced !== 'auto') {
    const build = builds.find((b) => b.backend === forced) ?? null
    const howTo = isBuiltinRuntime(forced) ? HOW_TO_BUILD : buildOf(forced)
    return build
      ? { chosen: build, reason: `forced by config (runtime: ${forced})`, warning: forced !== 'cpu' && !present.has(forced) ? `runtime ${forced} is forced but no ${forced} device was detected` : null }
      : { chosen: null, reason: `runtime ${forced} is forced by config but no ${forced} build was found; ${howTo}`, warning: null }
  }
  for (const backend of preference) {
    if (!present.has(backend)) continue
    const build = builds.find((b) => b.backend === backend)
    if (!build) continue
    const gpus = devices.filter((d) => d.backend !== 'cpu')
    const missing = gpus.filter((d) => preference.indexOf(d.backend) < preference.indexOf(backend))
    const lost = missing[0]
    const warning = lost !== undefined
      ? `${lost.backend} device found (${lost.name}) but no ${lost.backend} build: running on ${backend}. To use the GPU: ${buildOf(lost.backend)}`
      : null
    const reason = backend === 'cpu'
      ? (gpus.length === 0 ? 'no GPU found' : `no build for the GPU found (${[...new Set(gpus.map((g) => g.backend))].join(', ')})`)
      : `${devices.filter((d) => d.backend === backend).length} ${backend} device(s) found`
    return { chosen: build, reason, warning }
  }
  return { chosen: null, reason: `no llama.cpp build found; ${HOW_TO_BUILD}`, warning: null }
}
