import type { ValidateFunction } from 'ajv'
import { Type, type TObject, type TProperties } from 'typebox'
import { ConfigSchema, MODEL_KEYS, runtimeKeys } from '../config/config-schema.js'
import { ajv } from '../base/lazy-require.js'
import type { ConfigSection } from '../config/config-section.js'
import { builtinManifests } from './plugin-loader.js'
import { precompiledValidator } from '../config/precompiled-config-validator.js'

/**
 * The built-in plugins' config sections, in plugins/builtin.json's order, each from its manifest's `config`. Loaded
 * with this module (a top-level await), so that reading the configuration stays synchronous for every caller; a
 * section's module must therefore import no value from core/platform/config.ts, whose loading waits for it.
 */
export const BUILTIN_SECTIONS: readonly ConfigSection[] = await Promise.all(
  (await builtinManifests()).flatMap((m) => m.config ? [m.config()] : []),
)

/**
 * config.yaml as a whole: its schema (the core's keys, then each section's, at the top, under `limits` and under
 * each `models.<name>`), a validator, and the defaults it gives.
 */
export interface ConfigShape {
  schema: TObject
  /** Checks a merged configuration, filling in the defaults of keys left out. */
  validate: ValidateFunction
  defaults: Record<string, unknown>
}

const shapes = new WeakMap<readonly ConfigSection[], Map<string, ConfigShape>>()

/**
 * The shape for these sections and the runtime kinds plugins add (their names), made once per list and kinds.
 * @throws Error when a section claims a key another one has
 */
export function configShape (sections: readonly ConfigSection[] = BUILTIN_SECTIONS, runtimeKinds: readonly string[] = []): ConfigShape {
  let byKinds = shapes.get(sections)
  if (byKinds === undefined) shapes.set(sections, byKinds = new Map())
  const kindsKey = runtimeKinds.join(',')
  let shape = byKinds.get(kindsKey)
  if (shape === undefined) {
    const schema = assembleConfigSchema(sections, runtimeKinds)
    // The build's validator for the built-in sections (every CLI run and server start without plugin sections),
    // when it was made from this very schema; else compiled here (a third of a CLI run's CPU).
    const validate = (sections === BUILTIN_SECTIONS && runtimeKinds.length === 0 ? precompiledValidator(schema) : null) ?? compileConfigValidator(schema)
    // The defaults come from the schema itself, so config.yaml, the schemas and the code cannot disagree.
    const defaults = {}
    validate(defaults)
    shape = { schema, validate, defaults }
    byKinds.set(kindsKey, shape)
  }
  return shape
}

/** The Ajv options config.yaml is checked with: every error at once, and the schema's defaults filled in. */
export const CONFIG_AJV_OPTIONS = { allErrors: true, useDefaults: true, strict: false } as const

function compileConfigValidator (schema: TObject): ValidateFunction {
  return new (ajv().Ajv)(CONFIG_AJV_OPTIONS).compile(schema)
}

/**
 * config.yaml's schema: the core's keys with each section's added, `runtime` and `runtimes` taking the plugins'
 * runtime kinds too. @throws Error when a section claims a taken key
 */
export function assembleConfigSchema (sections: readonly ConfigSection[], runtimeKinds: readonly string[] = []): TObject {
  const keys: TProperties = { ...ConfigSchema.properties, ...(runtimeKinds.length > 0 ? runtimeKeys(runtimeKinds) : {}) }
  const limits: TProperties = { ...ConfigSchema.properties.limits.properties }
  const model: TProperties = { ...MODEL_KEYS }
  const claim = (into: TProperties, owned: TProperties, prefix: string, plugin: string): void => {
    for (const [key, schema] of Object.entries(owned)) {
      if (Object.hasOwn(into, key)) throw new Error(`the ${plugin} plugin's config section claims ${prefix}${key}, which is taken`)
      into[key] = schema
    }
  }
  for (const section of sections) {
    claim(keys, section.keys, '', section.plugin)
    claim(limits, section.limits ?? {}, 'limits.', section.plugin)
    claim(model, section.models ?? {}, 'models.<name>.', section.plugin)
  }
  keys.limits = Type.Object(limits, { additionalProperties: false, default: {} })
  keys.models = Type.Record(Type.String(), Type.Object(model, { additionalProperties: false }), { default: {} })
  return Type.Object(keys, { additionalProperties: false })
}
