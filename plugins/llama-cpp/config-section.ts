import { Type, type Static } from 'typebox'
import { configSection } from '../../core/config/config-section.js'
import { addressKind, parseHostPort } from '../../core/base/host-port.js'
import type { RpcWorkerConfig } from '../../runtimes/rpc/rpc-workers.js'

declare module '../../core/config/resolved-config.js' {
  interface Config {
    /** llama.cpp RPC workers models can be split across (`models.<name>.rpc`). */
    rpc: { workers: RpcWorkerConfig[] }
  }
  interface ModelConfig {
    /** Appended to the model's llama-server command line; once checked (config-check.ts), model file items are model names or absolute paths. */
    args?: string[]
    /** Names of `rpc.workers` the model's layers are split across. */
    rpc?: string[]
    /** llama-server's `--tensor-split`: each device's share of the layers. */
    tensorSplit?: number[]
  }
}

const RpcWorker = Type.Object({
  name: Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$' }),
  endpoint: Type.String({ minLength: 1, description: 'host:port of a llamagate rpc-worker (llama.cpp\'s rpc-server)' }),
  allow_public: Type.Optional(Type.Boolean({ description: 'use it even on a public address (the RPC protocol has no authentication)' })),
}, { additionalProperties: false })

/**
 * config.yaml's `rpc`, and each model's llama-server launch: `models.<name>.args`, `.rpc` (which must name workers)
 * and `.tensor_split`.
 */
export const section = configSection({
  plugin: 'llama-cpp',
  doc: 'docs/scaling.md',
  keys: {
    rpc: Type.Object({
      workers: Type.Array(RpcWorker, { default: [] }),
    }, { additionalProperties: false, default: {} }),
  },
  models: {
    args: Type.Optional(Type.Array(Type.String())),
    rpc: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { minItems: 1, description: 'names of rpc.workers this model is split across' })),
    tensor_split: Type.Optional(Type.Array(Type.Number({ minimum: 0 }), { minItems: 1, description: 'the share of the layers on each device, in llama-server\'s device order (RPC workers first)' })),
  },
  // The flags in `args` are checked by the manifest's config check (config-check.ts), which knows llama-server's.
  resolveModel ({ args, rpc, tensor_split: split }, name, { problem }) {
    if (split && !split.some((share) => share > 0)) problem(`models.${name}.tensor_split gives every device 0: at least one share must be more than 0`)
    return { ...(args?.length ? { args } : {}), ...(rpc ? { rpc } : {}), ...(split ? { tensorSplit: split } : {}) }
  },
  resolve (raw, { config, problem }) {
    const workers = rpcWorkers(raw.rpc.workers, problem)
    const names = new Set(workers.map((w) => w.name))
    for (const [name, model] of config.models) {
      const unknown = (model.rpc ?? []).filter((w) => !names.has(w))
      if (unknown.length > 0) problem(`models.${name}.rpc names ${unknown.map((w) => JSON.stringify(w)).join(', ')}, not among rpc.workers (${[...names].join(', ') || 'none'})`)
    }
    return { rpc: { workers } }
  },
})

/**
 * `rpc.workers`: names unique, endpoints host:port, and no public address unless allowed: the RPC protocol has no
 * authentication, and anyone who reaches a worker can run code on it (llama.cpp: "never expose it to an open network").
 */
function rpcWorkers (raw: ReadonlyArray<Static<typeof RpcWorker>>, problem: (message: string) => void): RpcWorkerConfig[] {
  const seen = new Set<string>()
  return raw.flatMap((w, at) => {
    const key = `rpc.workers[${at}] (${w.name})`
    if (seen.has(w.name)) problem(`${key}: the name is used twice; each worker needs its own`)
    seen.add(w.name)
    const endpoint = parseHostPort(w.endpoint)
    if (endpoint === null) {
      problem(`${key}: endpoint ${JSON.stringify(w.endpoint)} is not host:port (such as 10.0.0.5:50052 or [fd00::5]:50052)`)
      return []
    }
    if (addressKind(endpoint.host) === 'public' && w.allow_public !== true) {
      problem(`${key}: endpoint ${w.endpoint} is a public address, and llama.cpp's RPC protocol has no authentication (anyone who reaches the worker can use it); put workers on a private network, a VPN or an SSH tunnel, or set allow_public: true on this worker if a firewall already keeps others out`)
    }
    return [{ name: w.name, endpoint, allowPublic: w.allow_public === true }]
  })
}
