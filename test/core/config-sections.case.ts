import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { Type } from 'typebox'
import { CONFIG_ENVIRONMENT, ConfigError, loadConfig, resolveConfig } from '../../core/config.js'
import { ConfigSchema } from '../../core/config-schema.js'
import { configSection, list, numberOrText } from '../../core/config-section.js'
import { BUILTIN_SECTIONS, configShape } from '../../core/config-sections.js'
import { PACKAGE_ROOT, SHIPPED_CONFIG } from '../../core/paths.js'

// The plugins' sections of config.yaml, handed to the core through their manifests (core/config-section.ts).

t.test('each built-in plugin section: keys of its own, variables the server reads, a doc that names its keys', async (t) => {
  t.same(BUILTIN_SECTIONS.map((s) => s.plugin).sort(), ['convert', 'download', 'inference', 'llama-cpp', 'metrics', 'prompt-cache', 'security', 'upstreams'])
  for (const section of BUILTIN_SECTIONS) {
    for (const key of Object.keys(section.keys)) t.notOk(key in ConfigSchema.properties, `${key} (${section.plugin}) is not the core's`)
    for (const { name } of section.env ?? []) t.ok(CONFIG_ENVIRONMENT.includes(name), `${name} is listed among the server's variables`)
    const doc = readFileSync(join(PACKAGE_ROOT, section.doc), 'utf8')
    for (const key of Object.keys(section.keys)) t.ok(doc.includes(`${key}`), `${section.doc} names ${key} (${section.plugin})`)
  }
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
})
