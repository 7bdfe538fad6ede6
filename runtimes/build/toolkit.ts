import { constants } from 'node:fs'
import { access } from 'node:fs/promises'
import { delimiter, dirname, isAbsolute, join } from 'node:path'
import type { Backend } from '../types.js'

/** The GPU backends whose build the gateway makes by itself, given their compiler. */
export type BuildableBackend = 'cuda' | 'rocm'

interface ToolkitKind {
  /** The compiler whose presence means the toolkit is installed. */
  compiler: string
  /** The variables naming the toolkit's folder, then its usual place: where it is when its bin folder is not on PATH (CUDA's usual case). */
  homes: string[]
  home: string
  name: string
  install: string
}

const KINDS: Record<BuildableBackend, ToolkitKind> = {
  cuda: { compiler: 'nvcc', homes: ['CUDA_HOME', 'CUDA_PATH'], home: '/usr/local/cuda', name: 'CUDA toolkit', install: 'https://developer.nvidia.com/cuda-downloads, or apt-get install nvidia-cuda-toolkit' },
  rocm: { compiler: 'hipcc', homes: ['ROCM_PATH', 'HIP_PATH'], home: '/opt/rocm', name: 'ROCm toolkit', install: 'https://rocm.docs.amd.com, or apt-get install rocm-hip-sdk' },
}

/** A toolkit found: its compiler, and the environment a build needs to find it. */
export interface Toolkit {
  backend: BuildableBackend
  compiler: string
  /** The build's environment: the compiler's folder first on PATH (and CUDACXX for CUDA's CMake). */
  env: NodeJS.ProcessEnv
}

export function isBuildable (backend: Backend): backend is BuildableBackend {
  return backend === 'cuda' || backend === 'rocm'
}

/**
 * The compiler a GPU backend's llama.cpp build needs: on `env.PATH`, else in the toolkit's folder (`CUDA_HOME` or
 * `CUDA_PATH`, else /usr/local/cuda; `ROCM_PATH` or `HIP_PATH`, else /opt/rocm).
 * @returns null when it is not installed
 */
export async function findToolkit (backend: BuildableBackend, env: NodeJS.ProcessEnv): Promise<Toolkit | null> {
  const kind = KINDS[backend]
  const onPath = (env.PATH ?? '').split(delimiter).filter((dir) => isAbsolute(dir)).map((dir) => join(dir, kind.compiler))
  const home = kind.homes.map((name) => env[name]).find((dir) => dir !== undefined && isAbsolute(dir)) ?? kind.home
  for (const file of [...onPath, join(home, 'bin', kind.compiler)]) {
    if (!await isExecutable(file)) continue
    const buildEnv: NodeJS.ProcessEnv = { ...env, PATH: [dirname(file), env.PATH].filter(Boolean).join(delimiter) }
    // CMake's CUDA language looks for nvcc on PATH only; naming it spares the guess.
    if (backend === 'cuda') buildEnv.CUDACXX = file
    return { backend, compiler: file, env: buildEnv }
  }
  return null
}

/** The one line for a GPU found without its toolkit: what is missing, what runs instead, and the fix. */
export function missingToolkitLine (backend: BuildableBackend, device: string): string {
  const kind = KINDS[backend]
  const vendor = backend === 'cuda' ? 'NVIDIA' : 'AMD'
  return `${vendor} GPU found (${device}) but no ${kind.name} (${kind.compiler}) to build llama.cpp for it: running on CPU. ` +
    `To use the GPU: install the ${kind.name} (${kind.install}), then restart llamagate (it builds in the background), ` +
    `or run npm run runtime:build -- --backend ${backend}`
}

async function isExecutable (file: string): Promise<boolean> {
  try {
    await access(file, constants.X_OK)
    return true
  } catch {
    return false
  }
}
