import type { FastifyInstance } from 'fastify'
import type { Static, TSchema } from 'typebox'
import type { PluginManifest } from './plugin-manifest.js'

/** Where definePlugin keeps what the loader needs to know of a plugin: its name and its options' schema. */
export const PLUGIN_SPEC = Symbol.for('llamagate.plugin-spec')

// fastify-plugin's marks: a shared plugin's decorators reach the plugins after it; its name is what Fastify's
// `dependencies` checks and its errors name.
const SKIP_OVERRIDE = Symbol.for('skip-override')
const DISPLAY_NAME = Symbol.for('fastify.display-name')
const PLUGIN_META = Symbol.for('plugin-meta')

/**
 * `OptionsValue` is what `register` receives: the options' type, read from their schema. A parameter of its own rather
 * than `Static<Options>` in place: TypeScript would otherwise infer `Options` through TypeBox's `Static` while it types
 * `register`, some 1.3 million type instantiations (10 s of `tsc`) for each plugin an author checks.
 */
export interface PluginSpec<Options extends TSchema, OptionsValue = Static<Options>> {
  /** The plugin's name: every load failure, refusal of its options and log line about it says it. */
  name: string
  /**
   * The JSON schema of its `options` in config.yaml (TypeBox's `Type`, re-exported by `llamagate/plugin`): checked,
   * defaults filled in, before `register` runs; a bad value stops the start naming the plugin and the option.
   */
  options?: Options
  /** Names of plugins (built-in or not) that must be registered before this one; Fastify checks them. */
  dependencies?: string[]
  /**
   * Whether what it decorates reaches the plugins registered after it (fastify-plugin's way); without it the
   * plugin's decorators and hooks stay inside it (Fastify's encapsulation). @default false
   */
  shared?: boolean
  /**
   * What it brings besides its routes, read without registering it: CLI commands, `llamagate doctor` checks, a
   * section of config.yaml of its own, checks of the configuration and before a start (core/platform/plugin-manifest.ts,
   * under the plugin's name; docs/plugins.md).
   */
  manifest?: Omit<PluginManifest, 'name'>
  /** Adds the plugin's routes, hooks and decorators; `options` are config.yaml's, checked against `options`. */
  register: (app: FastifyInstance, options: NoInfer<OptionsValue>) => Promise<void> | void
}

/** A Fastify plugin that carries its spec: the loader checks its options and names it. */
export interface LlamagatePlugin {
  (app: FastifyInstance, options: Record<string, unknown>): Promise<void>
  readonly [PLUGIN_SPEC]: PluginSpec<TSchema>
}

/**
 * Makes a plugin of a spec: a Fastify plugin function (so it can be registered as one, in a plugin's own tests
 * too) that the loader recognizes, to check its options against its schema and to name it in every failure.
 */
export function definePlugin<Options extends TSchema, OptionsValue = Static<Options>> (spec: PluginSpec<Options, OptionsValue>): LlamagatePlugin {
  const plugin = async (app: FastifyInstance, options: Record<string, unknown>): Promise<void> => {
    await spec.register(app, options as NoInfer<OptionsValue>)
  }
  Object.defineProperty(plugin, 'name', { value: spec.name })
  const marks: Record<symbol, unknown> = {
    [PLUGIN_SPEC]: spec,
    [DISPLAY_NAME]: spec.name,
    [PLUGIN_META]: { name: spec.name, dependencies: spec.dependencies ?? [] },
  }
  if (spec.shared === true) marks[SKIP_OVERRIDE] = true
  return Object.assign(plugin, marks) as unknown as LlamagatePlugin
}

/** The spec of a plugin made by definePlugin, or null for a plain Fastify plugin function. */
export function pluginSpec (plugin: unknown): PluginSpec<TSchema> | null {
  if (typeof plugin !== 'function') return null
  const spec = (plugin as unknown as Record<symbol, unknown>)[PLUGIN_SPEC]
  return typeof spec === 'object' && spec !== null ? spec as PluginSpec<TSchema> : null
}
