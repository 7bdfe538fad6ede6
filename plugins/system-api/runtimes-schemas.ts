import { Type } from 'typebox'
/** A runtime kind: a built-in's (cuda, rocm, metal, vulkan, cpu) or one a plugin added. */
const Backend = Type.String()

export const Device = Type.Object({
  backend: Backend,
  index: Type.Integer(),
  name: Type.String(),
  /** Bytes; 0 where the probe does not say (Vulkan, ROCm through rocminfo). */
  totalBytes: Type.Number(),
  freeBytes: Type.Number(),
})

export const RuntimeBuild = Type.Object({
  backend: Backend,
  binDir: Type.String(),
  serverPath: Type.String(),
  quantizePath: Type.Union([Type.String(), Type.Null()]),
  rpcServerPath: Type.Union([Type.String(), Type.Null()]),
  version: Type.String(),
  commit: Type.Union([Type.String(), Type.Null()]),
  /** Where it was found: config.yaml's runtimes, PATH, built by llamagate, or a folder its plugin kind named. */
  source: Type.Union([Type.Literal('config'), Type.Literal('path'), Type.Literal('built'), Type.Literal('plugin')]),
  features: Type.Object({ jinja: Type.Boolean(), flashAttn: Type.Boolean(), noWebui: Type.Boolean(), fit: Type.Boolean(), noWarmup: Type.Boolean(), rpc: Type.Boolean(), cacheSalt: Type.Boolean(), slotCheckpoints: Type.Boolean(), cachedPromptSaves: Type.Boolean(), loadGate: Type.Boolean() }),
})

/** A GPU runtime built in the background: where it is, and how far (ninja's compile steps). */
export const GpuBuild = Type.Object({
  backend: Backend,
  state: Type.Union([Type.Literal('building'), Type.Literal('failed'), Type.Literal('built'), Type.Literal('interrupted')]),
  step: Type.String(),
  completed: Type.Union([Type.Integer(), Type.Null()]),
  total: Type.Union([Type.Integer(), Type.Null()]),
  started_at: Type.String(),
  finished_at: Type.Union([Type.String(), Type.Null()]),
  error: Type.Union([Type.String(), Type.Null()]),
  /** The file holding the build's whole output. */
  log: Type.String(),
})

/** GET /api/runtimes: the hardware, the llama.cpp builds found, the one chosen and why. */
export const RuntimesReply = Type.Object({
  runtime: Type.Union([Type.Literal('auto'), Backend]),
  chosen: Type.Union([RuntimeBuild, Type.Null()]),
  reason: Type.String(),
  warning: Type.Union([Type.String(), Type.Null()]),
  quantize: Type.Object({ available: Type.Boolean(), path: Type.Union([Type.String(), Type.Null()]) }),
  /** Whether models can be split across RPC workers (llama-server has --rpc), and the worker binary to run them with. */
  rpc: Type.Object({ available: Type.Boolean(), serverPath: Type.Union([Type.String(), Type.Null()]) }),
  devices: Type.Array(Device),
  builds: Type.Array(RuntimeBuild),
  rejected: Type.Array(Type.Object({ binDir: Type.String(), error: Type.String() })),
  /** The GPU runtime being built in the background (or whose build failed); null when there is none. */
  build: Type.Union([GpuBuild, Type.Null()]),
})

const RpcDevice = Type.Object({ index: Type.Integer(), free_bytes: Type.Number(), total_bytes: Type.Number() })

/** GET /api/rpc-workers: each RPC worker of config.yaml, whether it answers, and its devices' memory. */
export const RpcWorkersReply = Type.Object({
  workers: Type.Array(Type.Object({
    name: Type.String(),
    endpoint: Type.String(),
    state: Type.Union([Type.Literal('ready'), Type.Literal('busy'), Type.Literal('unreachable'), Type.Literal('incompatible'), Type.Literal('refused'), Type.Literal('in_use')]),
    version: Type.Union([Type.String(), Type.Null()]),
    devices: Type.Array(RpcDevice),
    checked_at: Type.Union([Type.String(), Type.Null()]),
    error: Type.Union([Type.String(), Type.Null()]),
    used_by: Type.Array(Type.String()),
  })),
})
