import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import ts from 'typescript'
import { PACKAGE_ROOT } from '../../core/base/paths.js'
import { docMentions, type Mention } from '../helpers/doc-mentions.js'
import { projectDir, typeCheck } from '../helpers/example-plugin.js'

// docs/plugins.md sends a plugin's author only to what the published types have: every `app.x.y` and `request.x` it
// names is on the app and request a plugin is given, every name it imports from llamagate/plugin or
// llamagate/testing is exported there, and every API-like name of its code spans (`KeyLine`, `grantLease`) is an
// export, or a field of a published type (`timeoutMs`). Checked by tsc against dist/types, as a plugin is.

const TYPES = join(PACKAGE_ROOT, 'dist', 'types')
const DOC = 'docs/plugins.md'
// Names of other tools the page mentions: web and JavaScript globals, TypeScript's, Fastify's hook, HTTP's.
const OTHER_NAMES = new Set(['Response', 'WeakMap', 'NoInfer', 'NodeNext', 'moduleResolution', 'onRequest', 'Accept', 'OPTIONS'])

/** Every member name the published declarations give a type (fields, methods), and every name they declare. */
function publishedMembers (): Set<string> {
  const names = new Set<string>()
  const visit = (node: ts.Node): void => {
    if ((ts.isPropertySignature(node) || ts.isMethodSignature(node) || ts.isPropertyDeclaration(node) ||
      ts.isMethodDeclaration(node)) && ts.isIdentifier(node.name)) names.add(node.name.text)
    ts.forEachChild(node, visit)
  }
  for (const file of readdirSync(TYPES, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.d.ts'))) {
    visit(ts.createSourceFile(file, readFileSync(join(TYPES, file), 'utf8'), ts.ScriptTarget.ES2022, true))
  }
  return names
}

/** A chain as the published app must have it: a plugin's own section widens `app.config`, so only `app.config` is held. */
const held = (chain: string): string => chain.startsWith('app.config.') ? 'app.config' : chain

interface Probe { source: string, mentions: Map<number, string> }

/** One TypeScript file whose lines each use one mention; a mention the published types lack is a type error on its line. */
function probe (mentions: Array<{ kind: 'chain' | 'name', text: string, where: string }>): Probe {
  const lines = [
    // Fastify's app and request as a plugin is given them: the test kit's app, an authenticator's request.
    "import type { Authenticator } from 'llamagate/plugin'",
    "import type { TestGateway } from 'llamagate/testing'",
    "declare const app: TestGateway['app']",
    "declare const request: Parameters<Authenticator['authenticate']>[0]",
  ]
  const at = new Map<number, string>()
  mentions.forEach(({ kind, text, where }, i) => {
    lines.push(kind === 'chain' ? `void ${held(text)}` : `import type { ${text} as mention${i} } from './api.js'`)
    at.set(lines.length, `${where}: ${text}`)
  })
  return { source: lines.join('\n') + '\n', mentions: at }
}

/** The mentions (`where: text`) tsc finds no published declaration for, and any other error it reports. */
async function unpublished (t: Parameters<typeof projectDir>[0], probed: Probe): Promise<{ missing: string[], other: string[] }> {
  const errors = await typeCheck(await projectDir(t), {
    'api.ts': "export * from 'llamagate/plugin'\nexport * from 'llamagate/testing'\n",
    'probe.ts': probed.source,
  })
  const missing = new Set<string>()
  const other: string[] = []
  for (const error of errors) {
    const line = /^probe\.ts\((\d+),\d+\)/.exec(error)?.[1]
    const mention = line === undefined ? undefined : probed.mentions.get(Number(line))
    if (mention === undefined) other.push(error)
    else missing.add(mention)
  }
  return { missing: [...missing], other }
}

/** What to check of a page's mentions: chains and imports always, a camelCase name only when no published type has it as a member. */
function checks (where: string, markdown: string, members: Set<string>): Array<{ kind: 'chain' | 'name', text: string, where: string }> {
  const found = docMentions(markdown)
  const place = (m: Mention): string => `${where}:${m.line}`
  return [
    ...found.chains.map((m) => ({ kind: 'chain' as const, text: m.text, where: place(m) })),
    ...found.imports.map((m) => ({ kind: 'name' as const, text: m.text, where: place(m) })),
    ...found.names.filter((m) => !OTHER_NAMES.has(m.text) && !(/^[a-z]/.test(m.text) && members.has(m.text)))
      .map((m) => ({ kind: 'name' as const, text: m.text, where: place(m) })),
  ]
}

// Mentions of the gateway's inside, as the page once made them, and of what is published: the check must tell them apart.
const INSIDE = [
  'A plugin can add a backend with `app.leases.addBackend(backend)`, make its leases with `grantLease`,',
  'keep its places in a `KeyLine` and read `app.scheduler.snapshot()`; `LeaseBackend`\'s `requestCounts()` feeds /metrics.',
  '```ts',
  "import { definePlugin, KeyLine } from 'llamagate/plugin'",
  'app.store.delete(name)',
  '```',
].join('\n')
const INSIDE_MISSING = ['app.leases.addBackend', 'grantLease', 'KeyLine', 'app.scheduler.snapshot', 'LeaseBackend', 'requestCounts', 'app.store.delete']
const PUBLISHED = 'A `BackendSpec` added with `app.backends.add(spec)`, its `timeoutMs`; `definePlugin`, `app.store.list()`, `request.grant`.'

t.test(`${DOC} gives the API's version as the code has it`, async (t) => {
  const { PLUGIN_API_VERSION } = await import('../../core/platform/plugin-api.js')
  const stated = /`PLUGIN_API_VERSION` \(exported\) is (\d+)\./.exec(readFileSync(join(PACKAGE_ROOT, DOC), 'utf8'))?.[1]
  t.equal(Number(stated), PLUGIN_API_VERSION)
})

t.test(`${DOC} names only what llamagate/plugin and llamagate/testing publish`, async (t) => {
  const members = publishedMembers()
  t.ok(members.has('timeoutMs') && !members.has('addBackend'), 'the published members are the public types\' only')
  const doc = readFileSync(join(PACKAGE_ROOT, DOC), 'utf8')
  const found = docMentions(doc)
  t.ok(found.chains.length > 15 && found.imports.length > 3 && found.names.length > 20,
    `the page's mentions are read: ${found.chains.length} chains, ${found.imports.length} imports, ${found.names.length} names`)
  const page = checks(DOC, doc, members)
  const inside = checks('inside', INSIDE, members)
  const published = checks('published', PUBLISHED, members)
  const { missing, other } = await unpublished(t, probe([...page, ...inside, ...published]))
  t.same(other, [], 'no other type error')
  t.same(missing.filter((m) => m.startsWith(`${DOC}:`)), [], `every name ${DOC} gives is published`)
  const caught = new Set(missing.filter((m) => m.startsWith('inside:')).map((m) => m.replace(/^inside:\d+: /, '')))
  t.same([...caught].sort(), [...INSIDE_MISSING].sort(), 'each mention of the inside is caught')
  t.same(missing.filter((m) => m.startsWith('published:')), [], 'no published name is taken for the inside')
})
