import type { Config } from '../../core/platform/config.js'
import type { Device, RuntimeBuild } from '../types.js'
import { BUILD_RECIPE } from './build-runtime.js'
import { buildStatusPath, readBuildRecord, type GpuBuildRecord } from './build-status.js'
import { findToolkit, isBuildable, missingToolkitLine, type BuildableBackend, type Toolkit } from './toolkit.js'

/** What to do at start about a GPU that has no llama.cpp build. */
export type GpuBuildPlan =
  | { action: 'build', backend: BuildableBackend, device: Device, toolkit: Toolkit, previous: GpuBuildRecord | null }
  | { action: 'no-toolkit', backend: BuildableBackend, device: Device, warning: string }
  | { action: 'failed-before', backend: BuildableBackend, device: Device, record: GpuBuildRecord, warning: string }
  | { action: 'none', why: string }

export interface PlanInput {
  config: Pick<Config, 'runtime' | 'buildGpuRuntime' | 'dataDir'>
  /** The devices and builds the registry found. */
  devices: Device[]
  builds: RuntimeBuild[]
  /** Where the toolkit's compiler is looked for (PATH). */
  env: NodeJS.ProcessEnv
}

/**
 * Whether to build a GPU runtime in the background: a CUDA or ROCm device found (the best one, or the one
 * `runtime` forces), no build for it, `build_gpu_runtime` on, and its compiler installed. A build that failed with
 * the same recipe is not tried again by itself: it would fail again at every start, costing minutes of CPU.
 */
export async function planGpuBuild (input: PlanInput): Promise<GpuBuildPlan> {
  const { config, devices, builds } = input
  const backend = config.runtime === 'auto'
    ? devices.map((d) => d.backend).find(isBuildable)
    : config.runtime
  if (backend === undefined) return { action: 'none', why: 'no CUDA or ROCm device found' }
  if (!isBuildable(backend)) return { action: 'none', why: `runtime ${backend} is forced by config` }
  const device = devices.find((d) => d.backend === backend)
  if (device === undefined) return { action: 'none', why: `no ${backend} device found` }
  if (builds.some((b) => b.backend === backend)) return { action: 'none', why: `a ${backend} build is there` }
  if (!config.buildGpuRuntime) return { action: 'none', why: 'build_gpu_runtime is false' }
  const toolkit = await findToolkit(backend, input.env)
  if (toolkit === null) return { action: 'no-toolkit', backend, device, warning: missingToolkitLine(backend, device.name) }
  const previous = readBuildRecord(config.dataDir, backend)
  if (previous?.state === 'failed' && previous.recipe === BUILD_RECIPE) {
    const warning = `building the ${backend} runtime for ${device.name} failed on ${previous.finished_at ?? previous.started_at} (${previous.error ?? 'no reason given'}; log: ${previous.log}): running on CPU. ` +
      `Not retried by itself: run npm run runtime:build -- --backend ${backend} to try again now, or delete ${buildStatusPath(config.dataDir, backend)} to try again at the next start`
    return { action: 'failed-before', backend, device, record: previous, warning }
  }
  return { action: 'build', backend, device, toolkit, previous }
}
