import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { Type } from 'typebox'
import { CONFIG_ENVIRONMENT, ConfigError, loadConfig, resolveConfig } from '../../core/platform/config.js'
import { ConfigSchema, MODEL_KEYS } from '../../core/config/config-schema.js'
import { configSection, list, numberOrText } from '../../core/config/config-section.js'
import { BUILTIN_SECTIONS, configShape } from '../../core/platform/config-sections.js'
import { PACKAGE_ROOT, SHIPPED_CONFIG } from '../../core/base/paths.js'

// The plugins' sections of config.yaml, handed to the core through their manifests (core/config/config-section.ts).

t.test('each built-in plugin section: keys of its own, variables the server reads, a doc that names its keys', async (t) => {
  t.same(BUILTIN_SECTIONS.map((s) => s.plugin).sort(), ['batches', 'convert', 'download', 'inference', 'lifecycle', 'llama-cpp', 'metrics', 'models-api', 'prompt-cache', 'scheduler', 'security', 'storage', 'upstreams'])
  for (const section of BUILTIN_SECTIONS) {
    for (const key of Object.keys(section.keys)) t.notOk(key in ConfigSchema.properties, `${key} (${section.plugin}) is not the core's`)
    for (const key of Object.keys(section.limits ?? {})) t.notOk(key in ConfigSchema.properties.limits.properties, `limits.${key} (${section.plugin}) is not the core's`)
    for (const key of Object.keys(section.models ?? {})) t.notOk(key in MODEL_KEYS, `models.<name>.${key} (${section.plugin}) is not the core's`)
    for (const { name } of section.env ?? []) t.ok(CONFIG_ENVIRONMENT.includes(name), `${name} is listed among the server's variables`)
    const doc = readFileSync(join(PACKAGE_ROOT, section.doc), 'utf8')
    for (const key of Object.keys(section.keys)) t.ok(doc.includes(`${key}`), `${section.doc} names ${key} (${section.plugin})`)
    for (const key of Object.keys(section.limits ?? {})) t.ok(doc.includes(`${key}`), `${section.doc} names limits.${key} (${section.plugin})`)
    for (const key of Object.keys(section.models ?? {})) t.ok(doc.includes(`${key}`), `${section.doc} names models.<name>.${key} (${section.plugin})`)
  }
})

t.test('the core types no plugin\'s key of a model: each built-in per-model key has one owner', async (t) => {
  const owners = Object.fromEntries(BUILTIN_SECTIONS.flatMap((s) => Object.keys(s.models ?? {}).map((key) => [key, s.plugin])))
  t.same(Object.keys(MODEL_KEYS).sort(), ['aliases', 'options'])
  t.same(owners, {
    args: 'llama-cpp', rpc: 'llama-cpp', tensor_split: 'llama-cpp', priority: 'scheduler', pinned: 'scheduler', preload: 'lifecycle', keep_alive: 'lifecycle',
  })
})

t.test('README\'s environment table lists every variable the configuration reads, the sections\' too, and no other', async (t) => {
  const readme = readFileSync(join(PACKAGE_ROOT, 'README.md'), 'utf8')
  const table = readme.slice(readme.indexOf('| environment | key |'))
  const rows = table.slice(0, table.indexOf('\n\n')).split('\n').slice(2)
  const named = rows.flatMap((row) => [...row.split('|')[1]!.matchAll(/`([A-Z_]+)`/g)].map((m) => m[1]!))
  t.same(named.sort(), [...CONFIG_ENVIRONMENT].sort())
})

// A plugin's section as a third party would write one.
const section = configSection({
  plugin: 'audit',
  doc: 'docs/plugins.md',
  keys: {
    audit: Type.Object({
      file: Type.String({ minLength: 1, default: 'audit.log' }),
      every: Type.Union([Type.Number(), Type.String()], { default: '1m' }),
      tags: Type.Array(Type.String({ minLength: 1 }), { default: ['base'] }),
    }, { additionalProperties: false, default: {} }),
  },
  limits: { audit_lines: Type.Integer({ minimum: 1, default: 100 }) },
  env: [
    { name: 'AUDIT_LINES', key: ['limits', 'audit_lines'], parse: numberOrText },
    { name: 'AUDIT_TAGS', key: ['audit', 'tags'], parse: list, append: true },
  ],
  resolve ({ audit, limits }, { config, duration, problem }) {
    if (audit.file.includes('..')) problem('audit.file must stay in data_dir')
    return { audit: { file: join(config.dataDir, audit.file), everyMs: duration('audit.every', audit.every), tags: audit.tags }, limits: { auditLines: limits.audit_lines } } as never
  },
})
const sections = [...BUILTIN_SECTIONS, section]
type Audited = { audit: { file: string, everyMs: number, tags: string[] }, limits: { auditLines: number } }

t.test('a section\'s defaults, environment variables and resolution reach the typed configuration', async (t) => {
  const config = loadConfig({ config: SHIPPED_CONFIG }, { LLAMAGATE_HOME: '/srv/lg', AUDIT_LINES: '7', AUDIT_TAGS: 'a, b' }, sections) as unknown as Audited
  t.same(config.audit, { file: '/srv/lg/audit.log', everyMs: 60_000, tags: ['base', 'a', 'b'] }, 'an append variable adds to the list')
  t.equal(config.limits.auditLines, 7, 'its limits under limits, beside the core\'s')
  t.equal((config as unknown as { limits: { queueLength: number } }).limits.queueLength, 64)
  t.notOk('audit' in resolveConfig([]), 'the built-in sections alone know no audit key')
})

t.test('a section\'s bad values are refused as the core\'s are: the key, the value, where it came from', async (t) => {
  t.throws(() => loadConfig({ config: SHIPPED_CONFIG }, { AUDIT_LINES: '0' }, sections), /limits\.audit_lines = 0 is not allowed: must be >= 1 \(from AUDIT_LINES\)/)
  t.throws(() => resolveConfig([{ source: 'x.yaml', values: { audit: { fil: 'a' } } }], null, sections), /audit\.fil is not a known key; allowed keys here: file, every, tags/)
  const err = t.throws(() => resolveConfig([{ source: 'x.yaml', values: { audit: { file: '../a', every: 'soon' } } }], null, sections)) as ConfigError
  t.type(err, ConfigError)
  t.same(err.problems, ['audit.file must stay in data_dir', 'audit.every = "soon" is not allowed: must be a duration such as 30, "90s", "5m" or "1h" (from x.yaml)'])
  t.throws(() => resolveConfig([{ source: 'x.yaml', values: { audit: {} } }]), /audit is not a known key/, 'unknown without its section')
})

t.test('a section may not claim a key the core or another section has', async (t) => {
  const taken = configSection({ plugin: 'greedy', doc: 'docs/plugins.md', keys: { hub: Type.String() }, resolve: () => ({}) })
  t.throws(() => configShape([...BUILTIN_SECTIONS, taken]), /the greedy plugin's config section claims hub, which is taken/)
  const limit = configSection({ plugin: 'greedy', doc: 'docs/plugins.md', keys: {}, limits: { body_size: Type.String() }, resolve: () => ({}) })
  t.throws(() => configShape([limit]), /claims limits\.body_size, which is taken/)
  const model = configSection({ plugin: 'greedy', doc: 'docs/plugins.md', keys: {}, models: { pinned: Type.Optional(Type.String()) }, resolve: () => ({}) })
  t.throws(() => configShape([...BUILTIN_SECTIONS, model]), /the greedy plugin's config section claims models\.<name>\.pinned, which is taken/)
  const options = configSection({ plugin: 'greedy', doc: 'docs/plugins.md', keys: {}, models: { options: Type.Optional(Type.String()) }, resolve: () => ({}) })
  t.throws(() => configShape([options]), /claims models\.<name>\.options, which is taken/, 'the core\'s own too')
})

// Keys under each model, as a third party's plugin would add them: typed where it reads them, by declaration merging.
declare module '../../core/config/resolved-config.js' {
  interface ModelConfig {
    /** The audit plugin's test key: tokens a model may spend a day. */
    auditBudget?: number
    auditLevel?: 'quiet' | 'loud'
  }
}

// What the section's own resolve saw of a model: its fields are in place before it runs.
let seenByResolve: number | undefined
const perModel = configSection({
  plugin: 'audit',
  doc: 'docs/plugins.md',
  keys: {},
  models: {
    audit_budget: Type.Optional(Type.Integer({ minimum: 1 })),
    audit_every: Type.Optional(Type.Union([Type.Number(), Type.String()])),
    audit_level: Type.Union([Type.Literal('quiet'), Type.Literal('loud')], { default: 'quiet' }),
  },
  resolveModel ({ audit_budget: budget, audit_every: every, audit_level: level }, name, { config, duration, problem }) {
    // The raw keys are typed from the schemas (budget: number | undefined, level: 'quiet' | 'loud'); the context is
    // the core's configuration so far, and the readers that name the key.
    if (every !== undefined && duration(`models.${name}.audit_every`, every) > config.keepAliveMs) problem(`models.${name}.audit_every is longer than keep_alive`)
    return { ...(budget !== undefined ? { auditBudget: budget } : {}), auditLevel: level }
  },
  resolve: (_raw, { config }) => {
    seenByResolve = config.models.get('acme/a')?.auditBudget
    return {}
  },
})

t.test('a section\'s keys under models.<name>: defaults filled in, resolved into each model\'s typed config', async (t) => {
  const config = resolveConfig([{ source: 'x.yaml', values: { models: { 'acme/a': { audit_budget: 5000, options: { num_ctx: 2048 } }, 'acme/b': { audit_level: 'loud', pinned: true } } } }], null, [...BUILTIN_SECTIONS, perModel])
  const a = config.models.get('acme/a')
  const budget: number | undefined = a?.auditBudget
  t.equal(budget, 5000, 'typed as the plugin declared it')
  t.same(a, { options: { num_ctx: 2048 }, auditBudget: 5000, auditLevel: 'quiet' }, 'the core\'s keys, and the default of a key left out')
  t.same(config.models.get('acme/b'), { pinned: true, auditLevel: 'loud' }, 'beside the built-in sections\' keys')
  t.equal(seenByResolve, 5000, 'the section\'s resolve sees its models\' fields')
  t.throws(() => resolveConfig([{ source: 'x.yaml', values: { models: { 'acme/a': { audit_budget: 1 } } } }]), /models\.acme\/a\.audit_budget is not a known key/, 'unknown without its section')
  const bare = configSection({ plugin: 'bare', doc: 'docs/plugins.md', keys: {}, models: { bare_tag: Type.Optional(Type.String()) }, resolve: () => ({}) })
  const tagged = resolveConfig([{ source: 'x.yaml', values: { models: { 'acme/a': { bare_tag: 't' }, 'acme/b': {} } } }], null, [bare])
  t.same([tagged.models.get('acme/a'), tagged.models.get('acme/b')], [{ bare_tag: 't' }, {}], 'without resolveModel: the keys set, as written')
})

t.test('a section\'s bad value under models.<name> is refused naming models.<name>.<key>, the value and its source', async (t) => {
  const sections = [...BUILTIN_SECTIONS, perModel]
  const err = t.throws(() => resolveConfig([{ source: '/etc/llamagate.yaml', values: { models: { 'acme/a': { audit_budget: 0, audit_level: 'noisy', priority: 500 } } } }], null, sections)) as ConfigError
  t.type(err, ConfigError)
  for (const expected of [
    'models.acme/a.audit_budget = 0 is not allowed: must be >= 1 (from /etc/llamagate.yaml)',
    'models.acme/a.audit_level = "noisy" is not allowed: must be one of "quiet", "loud" (from /etc/llamagate.yaml)',
    'models.acme/a.priority = 500 is not allowed: must be <= 100 (from /etc/llamagate.yaml)',
  ]) t.ok(err.problems.includes(expected), expected)
  t.equal(err.problems.length, 3, 'every bad value, the plugins\' and the built-ins\', in one check')
  t.throws(() => resolveConfig([{ source: 'x.yaml', values: { models: { 'acme/a': { audit_bugdet: 1 } } } }], null, sections), /models\.acme\/a\.audit_bugdet is not a known key; allowed keys here: options, aliases, .*audit_budget, audit_every, audit_level/)
  t.throws(() => resolveConfig([{ source: 'x.yaml', values: { models: { 'acme/a': { audit_every: 'soon' } } } }], null, sections), /models\.acme\/a\.audit_every = "soon" is not allowed: must be a duration .*\(from x\.yaml\)/)
  t.throws(() => resolveConfig([{ source: 'x.yaml', values: { models: { 'acme/a': { audit_every: '1h' } } } }], null, sections), /models\.acme\/a\.audit_every is longer than keep_alive/)
})
