import t from 'tap'
import { exampleSource, projectDir, typeCheck } from '../helpers/example-plugin.js'

// Every example of docs/examples type-checks against the published types (`llamagate/plugin`, `llamagate/testing`)
// in a plugin author's strict project, and each wrong use of them a mistake copy makes is caught: one tsc run for
// all of them (each run costs some 10 s of CPU).

interface Mistake {
  /** What the copy gets wrong. */
  what: string
  source: string
  /** The errors tsc must report in it, and no others. */
  errors: RegExp[]
}

async function mistakes (): Promise<Record<string, Mistake>> {
  const greeting = await exampleSource('greeting-plugin.ts')
  const token = await exampleSource('signed-token-plugin.ts')
  const motd = await exampleSource('motd-plugin.ts')
  const folder = await exampleSource('folder-source-plugin.ts')
  return {
    'bad-greeting.ts': {
      what: 'an option used as what its schema says it is not; a decorator\'s method that does not exist',
      source: greeting.replace('`${options.greeting}, ', '`${options.greeting.toFixed(1)}, ')
        .replace('app.store.list().length', 'app.store.listAll().length'),
      errors: [/error TS\d+: Property 'toFixed' does not exist on type 'string'/, /error TS2339: Property 'listAll' does not exist on type 'StoredModels'/],
    },
    'bad-internals.ts': {
      what: 'a built-in service the published types do not carry; a store method beyond the read-only view',
      source: greeting.replace('app.store.list().length', 'app.scheduler.snapshot().length + (await app.store.delete(\'x\'), 0)'),
      errors: [/error TS2339: Property 'scheduler' does not exist on type 'FastifyInstance<.*>'/, /error TS2339: Property 'delete' does not exist on type 'StoredModels'/],
    },
    'bad-options.ts': {
      what: 'register\'s options annotated as what their schema does not say',
      source: greeting.replace('register (app, options) {', 'register (app, options: { greeting: number, route: string }) {'),
      errors: [/error TS2322: Type '\(app: FastifyInstance<.*>, options: \{ \.\.\.; \}\) => void' is not assignable to type '\(app: FastifyInstance<.*>, options: .*\) => void \| Promise<\.\.\.>'/],
    },
    'bad-token.ts': {
      what: 'a grant\'s scopes of the wrong type',
      source: token.replace('scopes: scopes as Scope[],', "scopes: 'infer',"),
      errors: [/error TS2322: Type 'string' is not assignable to type 'readonly Scope\[\]'/],
    },
    'bad-motd.ts': {
      what: 'a key its config section does not have (the Config widening reaches the plugin)',
      source: motd.replace('const { text } = (await config()).motd', 'const { text } = (await config()).motd.message'),
      errors: [/error TS2339: Property 'message' does not exist/],
    },
    'bad-registries.ts': {
      what: 'a model source\'s pull answering what the registry does not take; a backend\'s models not a list',
      source: folder.replace('return to\n', 'return { file: to }\n')
        .replace("import { definePlugin, ModelNotFoundError, Type } from 'llamagate/plugin'", "import { definePlugin, ModelNotFoundError, Type, type BackendSpec } from 'llamagate/plugin'\nexport const wrong: BackendSpec = { name: 'x', models: () => 5, fetch: async () => new Response('') }"),
      errors: [/error TS2322: Type '.*Promise<\{ file: string; \}>' is not assignable to type '\(model: string, context: PullContext\) => Promise<string>'/, /error TS2322: Type 'number' is not assignable to type 'readonly string\[\]'/],
    },
    'bad-hooks.ts': {
      what: 'a piece hook answering a verdict the API does not take',
      source: "import type { CallHook } from 'llamagate/plugin'\nexport const hook: CallHook = { name: 'x', piece: () => 'stop' }\n",
      errors: [/error TS2322/],
    },
    'bad-end.ts': {
      what: 'an end hook releasing what is not text',
      source: "import type { CallHook } from 'llamagate/plugin'\nexport const hook: CallHook = { name: 'x', end: () => 5 }\n",
      errors: [/error TS2322/],
    },
  }
}

const EXAMPLES = ['greeting-plugin.ts', 'greeting-plugin.test.ts', 'signed-token-plugin.ts', 'motd-plugin.ts', 'echo-backend-plugin.ts',
  'folder-source-plugin.ts', 'guardrail-plugin.ts', 'pii-filter-plugin.ts', 'audit-plugin.ts', 'sycl-runtime-plugin.ts', 'decision-guardrail-plugin.ts']

t.test('the examples type-check against the published types; each mistake copy of them does not', async (t) => {
  const wrong = await mistakes()
  const files: Record<string, string> = {}
  for (const example of EXAMPLES) files[example] = await exampleSource(example)
  for (const [file, mistake] of Object.entries(wrong)) files[file] = mistake.source
  const errors = await typeCheck(await projectDir(t), files)
  t.same(errors.filter((line) => !line.startsWith('bad-')), [], 'no type error in the examples')
  for (const [file, mistake] of Object.entries(wrong)) {
    const its = errors.filter((line) => line.startsWith(`${file}(`))
    for (const error of mistake.errors) t.ok(its.some((line) => error.test(line)), `${file}, ${mistake.what}: ${error} in ${JSON.stringify(its)}`)
    t.equal(its.length, mistake.errors.length, `${file}: nothing else`)
  }
})
