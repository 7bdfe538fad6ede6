import type { Backend } from '../core/config/config-schema.js'

export type { Backend }

/** A device a backend can run models on, with its memory in bytes. */
export interface Device { backend: Backend, index: number, name: string, totalBytes: number, freeBytes: number }

/** What a backend module knows: how to find its hardware. */
export interface BackendModule {
  backend: Backend
  /** Devices present; empty when the hardware (or its probe) is not there. */
  detect(env: NodeJS.ProcessEnv): Promise<Device[]>
}

/** A runtime kind as the registry uses it: a built-in's module, or a plugin's kind (core/config/runtime-kinds.ts). */
export interface RuntimeKindModule extends BackendModule {
  /** Folders its llama-server may be in (a plugin kind's), after config.yaml's. */
  binDirs(env: NodeJS.ProcessEnv): Promise<readonly string[]>
  /** What every llama-server of it starts with: flags before the model's own, variables over the gateway's. */
  launch: { flags: readonly string[], env: Readonly<Record<string, string>> }
}

/** A llama.cpp build that was checked by running it. */
export interface RuntimeBuild {
  backend: Backend
  binDir: string
  serverPath: string
  quantizePath: string | null
  /** llama.cpp's RPC worker beside llama-server (`ggml-rpc-server`, `rpc-server` in older releases), if built. */
  rpcServerPath: string | null
  /** As `llama-server --version` prints it (`0.5.0-dev`). */
  version: string
  commit: string | null
  /** config.yaml's `runtimes`, PATH, built by llamagate, or a folder its plugin kind named. */
  source: 'config' | 'path' | 'built' | 'plugin'
  /**
   * Read from `--help`, not assumed from a release; `cacheSalt`: it keeps the prompt caches of requests with different
   * `cache_salt`s apart (llamagate's patch set), so that API keys in different cache groups may share it;
   * `slotCheckpoints`: its slot saves carry their context checkpoints, so that a restored slot of a hybrid or
   * sliding-window model is reused; `cachedPromptSaves`: it saves what its RAM prompt cache holds too (both the patch set);
   * `loadGate`: `--load-gate`, a start that waits before the model's tensors until told to load on (the patch set), so
   * that the next model is prepared while the one before still holds the memory.
   */
  features: RuntimeFeatures
}

export interface RuntimeFeatures { jinja: boolean, flashAttn: boolean, noWebui: boolean, fit: boolean, noWarmup: boolean, rpc: boolean, cacheSalt: boolean, slotCheckpoints: boolean, cachedPromptSaves: boolean, loadGate: boolean }
