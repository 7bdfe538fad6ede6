import type { Command } from './command.js'
import type { Check } from './check.js'
import type { Config } from '../config/resolved-config.js'
import type { ConfigSection } from '../config/config-section.js'
import type { RuntimeKind } from '../config/runtime-kinds.js'

/**
 * What a plugin brings besides its routes and services, read without loading its server code: its section of
 * config.yaml, commands of the `llamagate` CLI, checks for `llamagate doctor`, checks of config.yaml that need its
 * knowledge, and what `serve` must hear before it starts. A plugin
 * exports one (`manifest`) from its `plugin-manifest.ts` when plugins/builtin.json says it has one. Keep it light: the CLI loads
 * every manifest to start, so heavy modules are imported inside the functions.
 */
export interface PluginManifest {
  /** The plugin's name (its folder). */
  name: string
  /**
   * Its section of config.yaml (core/config/config-section.ts), loaded with the configuration rather than with the
   * manifest: `() => import('../config/config-section.js').then((m) => m.section)`.
   */
  config?: () => Promise<ConfigSection>
  commands?: readonly Command[]
  /** What `llamagate doctor` checks for this plugin, in the manifests' order. */
  doctor?: (context: DoctorContext) => Promise<DoctorReport>
  /** Checks of the resolved configuration that only this plugin can make. */
  checkConfig?: (config: Config, context: ConfigCheckContext) => ConfigCheck | Promise<ConfigCheck>
  /** What `llamagate serve` must say, or refuse, before it starts with this configuration (an exposed address, say). */
  startCheck?: (config: Config) => StartCheck | Promise<StartCheck>
  /**
   * llama.cpp build kinds it adds (core/config/runtime-kinds.ts): how their hardware is detected, where their llama-server
   * is, their flags. Their names become values of config.yaml's `runtime` and keys of its `runtimes`.
   */
  runtimes?: readonly RuntimeKind[]
}

export interface StartCheck {
  /** Why the server must not start; `serve` exits 2 with it. */
  refusal?: string
  /** Said at warn level once the server listens, each its own line. */
  warnings?: string[]
}

export interface DoctorContext {
  config: Config
  /** What earlier plugins' checks found and share with later ones (the runtime builds, say), by name. */
  shared: Map<string, unknown>
}

export interface DoctorReport {
  checks: Check[]
  /** Added to `doctor --json`, key by key. */
  json?: Record<string, unknown>
  /** False when this machine cannot serve because of what was found (doctor then exits 1). @default true */
  usable?: boolean
}

export interface ConfigCheckContext {
  /** The folder paths in the configuration are relative to (the config file's). */
  base: string
}

export interface ConfigCheck {
  /** Each problem in a sentence naming its key; any problem stops the start. */
  problems: string[]
  /** Values this plugin resolved (paths inside llama-server arguments, say), replacing the configuration's own. */
  resolved?: Partial<Config>
}
