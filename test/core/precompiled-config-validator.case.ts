import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { Ajv } from 'ajv'
import t from 'tap'
import { Type } from 'typebox'
import { assembleConfigSchema, BUILTIN_SECTIONS, CONFIG_AJV_OPTIONS, configShape } from '../../core/platform/config-sections.js'
import type { ConfigSection } from '../../core/config/config-section.js'
import { PACKAGE_ROOT } from '../../core/base/paths.js'
import type * as Precompiled from '../../core/config/precompiled-config-validator.js'

// The build's module, as a CLI run or a server start loads it (the sources have no generated file beside them).
const built = await import(pathToFileURL(join(PACKAGE_ROOT, 'dist', 'core', 'config', 'precompiled-config-validator.js')).href) as typeof Precompiled
const schema = assembleConfigSchema(BUILTIN_SECTIONS)

t.test('the build made the validator from the schema the sources assemble', async (t) => {
  t.ok(built.precompiledValidator(schema), 'a build of these sources has it, and a start uses it')
})

t.test('it fills and refuses exactly what a compiled validator does', async (t) => {
  const precompiled = built.precompiledValidator(schema)!
  const compiled = new Ajv(CONFIG_AJV_OPTIONS).compile(schema)
  const configs: unknown[] = [
    {},
    { port: 8080, default_options: { num_ctx: 2048 }, models: { 'acme/tiny': { options: { temperature: 0.2 }, pinned: true } } },
    { port: 'eighty', host: '', limits: { queue_length: -1, swap_wait: '30s' }, unknown_key: 1 },
    { models: { 'acme/tiny': { options: { num_parallel: 0 }, no_such_key: true } }, metrics: { listen: 'nowhere' } },
    { default_options: { dtype: 'q9_9' }, upstreams: [{ url: 42 }], vision: { max_remote_images: 0 } },
    [],
  ]
  for (const config of configs) {
    const a = structuredClone(config)
    const b = structuredClone(config)
    t.equal(precompiled(a), compiled(b), `the verdict on ${JSON.stringify(config)}`)
    t.same(a, b, 'the same defaults filled in')
    t.same(precompiled.errors ?? null, compiled.errors ?? null, 'the same errors, in the same order')
  }
  t.same(configShape().defaults, (() => { const d = {}; compiled(d); return d })(), "the sources' defaults too")
})

t.test('a schema with a section of its own is compiled, not given the build\'s validator', async (t) => {
  const section: ConfigSection = { plugin: 'extra', doc: 'extra:', keys: { extra: Type.Object({ on: Type.Boolean({ default: false }) }, { default: {} }) }, resolve: () => ({}) }
  t.equal(built.precompiledValidator(assembleConfigSchema([...BUILTIN_SECTIONS, section])), null)
  t.not(built.configSchemaDigest(assembleConfigSchema([...BUILTIN_SECTIONS, section])), built.configSchemaDigest(schema))
})
