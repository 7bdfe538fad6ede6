import { join } from 'node:path'
import type { FastifyBaseLogger } from 'fastify'
import { RuntimeError } from '../../core/errors.js'
import { LlamaServer, type RuntimeRegistry } from '../../runtimes/index.js'
import type { ModelStore } from '../storage/model-store.js'
import type { SchedulerRuntimes, SchedulerStore } from './ports.js'

/** The store as the scheduler sees it. */
export function storeAdapter (store: ModelStore): SchedulerStore {
  return {
    get: (name) => store.get(name),
    ggufPath: (model, dtype) => store.ggufPath(store.get(model.name), dtype),
  }
}

/**
 * The runtime registry and supervisor as the scheduler sees them. Each llama-server listens on a Unix socket
 * in `socketDir` (a folder only this user can enter), named by a counter so that no two ever share one.
 */
export function runtimeAdapter (registry: RuntimeRegistry, log: FastifyBaseLogger, socketDir: string): SchedulerRuntimes {
  let started = 0
  return {
    backend: () => registry.chosen?.backend ?? null,
    freeMemory: () => registry.freeMemory(),
    create: (options) => {
      const build = registry.chosen
      if (!build) throw new RuntimeError(`no llama.cpp runtime is available: ${registry.reason}`, [], 'no_runtime')
      return new LlamaServer({ socketPath: join(socketDir, `${++started}.sock`), ...options, build, log })
    },
  }
}
