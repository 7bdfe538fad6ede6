import type { Static, TObject, TProperties } from 'typebox'
import type { Config, ConfigLimits, ModelConfig } from './resolved-config.js'
import type { HostPort } from '../base/host-port.js'

/**
 * What a plugin adds to config.yaml, handed to the core through its manifest (`config`): its keys with their schema
 * and defaults, the environment variables that set them, how they resolve into the typed configuration, and where
 * they are explained. The core validates a section's keys with its own (one schema, one set of messages naming the
 * key, the value and where it came from) and merges what `resolve` returns into `Config`, which the plugin types by
 * declaration merging:
 *
 * ```ts
 * declare module '../../../core/resolved-config.js' {
 *   interface Config { upstreams: UpstreamConfig[] }
 *   interface ConfigLimits { upstream: UpstreamLimits }
 *   interface ModelConfig { budget?: number }
 * }
 * ```
 *
 * Loaded with the configuration (core/platform/config-sections.ts), before anything reads it: a section's module imports no
 * value from core/platform/config.ts, which waits for the sections.
 */
export interface ConfigSection<Keys extends TProperties = TProperties, Limits extends TProperties = TProperties, ModelKeys extends TProperties = TProperties> {
  /** The plugin's name (its folder), for messages about the section itself. */
  plugin: string
  /** config.yaml's top-level keys the plugin owns, each a TypeBox schema with its `default` (config.yaml repeats it). */
  keys: Keys
  /** Keys of config.yaml's `limits` the plugin owns, likewise. */
  limits?: Limits
  /**
   * Keys of each model's entry, `models.<name>.<key>`, the plugin owns: TypeBox schemas, most `Type.Optional` (a model
   * leaves them out); one with a `default` gets it in every model config.yaml names.
   */
  models?: ModelKeys
  /** Environment variables setting the section's keys; each wins over the config file, as the core's do. */
  env?: readonly EnvVariable[]
  /** Where the section is explained beyond config.yaml's comments: a file under docs/ that names each of its keys. */
  doc: string
  /**
   * The section's keys, validated and with defaults filled in, as the typed configuration's fields (under `limits`
   * for its limits). A value the schema cannot judge alone is reported through `context.problem`, naming its key.
   */
  resolve (raw: Static<TObject<Keys>> & { limits: Static<TObject<Limits>> }, context: SectionContext): ConfigPart
  /**
   * One model's keys of the section (`models`), validated, as fields of its `ModelConfig`; called for each model
   * config.yaml names, before `resolve` (whose `context.config.models` then holds them). A key is named
   * `models.<name>.<key>` in problems. @default the keys set, as written
   */
  resolveModel? (raw: Static<TObject<ModelKeys>>, name: string, context: SectionContext): Partial<ModelConfig>
}

/** An environment variable and the config key it sets. */
export interface EnvVariable {
  name: string
  /** The key it sets, as a path: `['hub', 'endpoint']`. */
  key: readonly string[]
  /** Its text as the schema expects the value (`numberOrText`, `list`); the schema check then names the variable. */
  parse?: (text: string) => unknown
  /** Adds its list to the key's list instead of replacing it (LLAMAGATE_ORIGINS). @default false */
  append?: boolean
}

/** What `resolve` returns: fields of `Config`, and of `Config.limits` under `limits`. */
export type ConfigPart = { [K in Exclude<keyof Config, 'limits'>]?: Config[K] } & { limits?: Partial<ConfigLimits> }

/** What a section resolves with: the core's resolved keys, and the readers that report a bad value by its key. */
export interface SectionContext {
  /** The configuration as resolved so far: the core's keys, then the sections before this one. */
  config: Readonly<Config>
  /** The folder relative paths are resolved against (the config file's). */
  base: string
  /** Reports a problem, a sentence naming its key; any problem stops the start. */
  problem (message: string): void
  /** Where a key's value came from: a file, an environment variable, `command line`, or `defaults`. */
  sourceOf (key: string): string
  /** A duration in ms (`30`, `"90s"`); a problem when it is none. */
  duration (key: string, value: unknown): number
  /** A duration in ms that must be longer than 0 (a timeout); a problem when it is not. */
  positiveDuration (key: string, value: unknown): number
  /** A size in bytes (`1048576`, `"16MiB"`) of at least 1; a problem when it is none. */
  size (key: string, value: unknown): number
  /** A listen address `host:port` (IPv6 in brackets), its port at least `lowest`. @default lowest 1 */
  listenAddress (key: string, text: string, lowest?: number): HostPort
}

/** A section with its raw keys typed from its schemas (what `resolve` receives), erased for the manifest. */
export function configSection<Keys extends TProperties, Limits extends TProperties = {}, ModelKeys extends TProperties = {}> (section: ConfigSection<Keys, Limits, ModelKeys>): ConfigSection {
  return section as unknown as ConfigSection
}

/** An environment variable's number as a number (the schema then checks its range), anything else as text. */
export function numberOrText (text: string): unknown {
  return /^-?\d+$/.test(text.trim()) ? Number(text) : text
}

/** A comma-separated environment variable as its items, trimmed, empty ones left out. */
export function list (text: string): string[] {
  return text.split(',').map((s) => s.trim()).filter((s) => s !== '')
}
