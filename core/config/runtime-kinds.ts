/** The llama.cpp build kinds llamagate knows itself, best first under `runtime: auto`. */
export const BUILTIN_RUNTIMES = ['cuda', 'rocm', 'metal', 'vulkan', 'cpu'] as const
export type BuiltinRuntime = (typeof BUILTIN_RUNTIMES)[number]

/** Whether `kind` is one llamagate knows itself (and builds, `npm run runtime:build`), not a plugin's. */
export function isBuiltinRuntime (kind: unknown): kind is BuiltinRuntime {
  return (BUILTIN_RUNTIMES as readonly unknown[]).includes(kind)
}

/** What a runtime kind's name must look like: it is a key of config.yaml's `runtimes` and a folder name. */
export const RUNTIME_KIND_NAME = /^[a-z][a-z0-9_-]{1,31}$/

/** A device a runtime kind runs models on. Bytes; 0 where its probe does not say (then only the model count limits loads). */
export interface RuntimeDevice {
  /** Its number among the kind's devices (what `--device <KIND><index>` would name). @default its place in the list */
  index?: number
  name: string
  totalBytes: number
  freeBytes: number
}

/** What a runtime kind's `detect` is given. */
export interface DetectContext {
  /** The environment the probes run with (PATH finds them). */
  env: NodeJS.ProcessEnv
  /**
   * Runs a probe program (`sycl-ls`, `npu-smi`) with the gateway's bound (3 s) in a process group of its own, and
   * gives its standard output; null when it is missing, fails or hangs: "not present", never an exception.
   */
  probe(command: string, args: readonly string[]): Promise<string | null>
}

/**
 * A llama.cpp build kind a plugin adds (its manifest's `runtimes`): SYCL for Intel GPUs, CANN for Ascend, MUSA, a
 * vendor's own fork. The gateway detects its hardware, finds its llama-server, chooses it under `runtime: auto` when
 * its devices are present and a build of it runs, and starts every llama-server of it with its flags and environment.
 * config.yaml then takes its name: `runtime: <name>`, `runtimes: { <name>: { bin: <folder> } }`.
 */
export interface RuntimeKind {
  /** 2-32 of `a-z 0-9 _ -`, starting with a letter; not a built-in's (cuda, rocm, metal, vulkan, cpu) nor another plugin's. */
  name: string
  /**
   * Its rank under `runtime: auto`: just before this built-in kind, after the plugin kinds listed before it. A kind
   * whose devices a generic probe also sees (Vulkan sees most GPUs) ranks before it. @default 'vulkan'
   */
  before?: BuiltinRuntime
  /** Its devices now; none when its hardware is not there. Asked at start and before each model load (free memory). */
  detect(context: DetectContext): Promise<readonly RuntimeDevice[]>
  /**
   * Folders where its llama-server may be (its vendor's install, an environment variable of its own), looked in
   * after config.yaml's `runtimes.<name>.bin`; each is run (`--version`, `--help`) before it is used. @default none
   */
  binDirs?(env: NodeJS.ProcessEnv): readonly string[] | Promise<readonly string[]>
  /** Flags every llama-server of this kind starts with, before a model's own `args` (which win). @default none */
  flags?: readonly string[]
  /** Variables every llama-server of this kind starts with, over the gateway's environment. @default none */
  env?: Readonly<Record<string, string>>
}
