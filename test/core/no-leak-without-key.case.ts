// Nothing leaks to a caller without a key: 502 and 507 messages carry llama-server's log lines and
// absolute paths, and /readyz listed them to anyone. With keys on, every route either is public and says nothing
// of the machine, or answers 401; this walks every route the app registered, so a route added later is covered.
import { truncate, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { loadConfig } from '../../core/platform/config.js'
import { openStore } from '../../plugins/storage/open-store.js'
import { writeTinyGguf } from '../../scripts/fixtures/tiny-model.js'
import { buildTestApp, tempDir } from '../helpers/app.js'
import { routesOf, sampleUrl as sample } from '../helpers/routes.js'
import { cpuRuntime } from '../helpers/runtime.js'
import { until } from '../helpers/until.js'

const KEY = 'sk-no-leak-test-key-0123456789'

// What answers without a key (plugins mark them `public`): the probes, Ollama's `GET /`, the web page's files, and
// CORS preflights (a browser sends those without credentials). A route made public later must be added here.
const PUBLIC = new Set(['/', '/livez', '/readyz', '/api/health', '/api/hello', '/api/version', '/ui', '/ui/', '/ui/:file'])

t.test('keys on: without a key or with a wrong one, every route is 401 or public, and no answer names a path, the config or a log line', async (t) => {
  const dir = await tempDir(t)
  const runtime = await cpuRuntime()
  const modelsDir = join(dir, 'models')
  // A model whose weights are cut short: llama-server reads its header, then fails to load it, logging why with
  // its path; preloaded, so that /readyz has that failure to tell.
  const gguf = join(dir, 'broken.gguf')
  const { bytes } = await writeTinyGguf({ file: gguf, name: 'acme/broken' })
  const store = await openStore(modelsDir)
  await store.import('acme/broken', gguf)
  store.close()
  await truncate(gguf, Math.floor(bytes / 2))
  const configFile = join(dir, 'config.yaml')
  await writeFile(configFile, [
    `data_dir: ${dir}`, `models_dir: ${modelsDir}`, 'log_level: silent', 'runtime: cpu',
    `runtimes: { cpu: { bin: ${runtime.binDir} } }`,
    'default_options: { num_ctx: 256, num_parallel: 1, num_thread: 1 }',
    `auth: { api_keys: [${KEY}] }`,
    'models: { acme/broken: { preload: true } }', '',
  ].join('\n'))
  const app = await buildTestApp(loadConfig({ config: configFile }, { LLAMAGATE_OLLAMA_LISTEN: 'off' }))
  t.teardown(() => app.close())
  const url = await app.listen({ host: '127.0.0.1', port: 0 })

  // With the key, the details are there: the failure's log lines, with the model's path.
  const reason = await until('the preload failed', async () => {
    const body = await (await fetch(`${url}/readyz`, { headers: { authorization: `Bearer ${KEY}` } })).json() as { reasons: string[] }
    return body.reasons.find((r) => r.includes('failed to start'))
  }, 60_000)
  t.match(reason, modelsDir, `a key holder's /readyz names the model's path: ${reason}`)
  // "0.00.076.339 E llama_model_load: error loading model: ..." | ...: each line's text after its time and level.
  const logLines = reason.replace(/^.*?\(exit code \d+\): /, '').split(' | ').map((l) => l.replace(/^[\d.]+ [A-Z] +/, '').trim())
  t.ok(logLines.length >= 2 && logLines.every((l) => l.length > 20), `with llama-server's log lines: ${JSON.stringify(logLines)}`)
  const runtimes = await (await fetch(`${url}/api/runtimes`, { headers: { authorization: `Bearer ${KEY}` } })).text()
  t.match(runtimes, runtime.binDir, 'a key holder\'s /api/runtimes names the runtime\'s folder')
  const secrets = [
    { what: 'the temporary folder', text: dir },
    { what: 'the config file', text: configFile },
    { what: 'the runtime\'s folder', text: runtime.binDir },
    ...logLines.map((l) => ({ what: 'a llama-server log line', text: l })),
  ]

  const routes = routesOf(app)
  t.ok(routes.length > 40, `${routes.length} routes found`)
  t.ok(routes.some((r) => r.method === 'POST' && r.url === '/api/chat') && routes.some((r) => r.url === '/v1/models/*'), 'among them /api/chat and /v1/models/*')
  const paths = [...new Set(routes.filter((r) => r.method !== 'OPTIONS').map((r) => r.url))]
  // The CORS preflight route ("*") answers every path: asked on each.
  const requests = routes.flatMap((r) => r.method === 'OPTIONS' ? paths.map((p) => ({ method: 'OPTIONS', url: p, public: true })) : [{ ...r, public: PUBLIC.has(r.url) }])
  // Not a route: the not-found answer must not tell a caller without a key which paths exist either.
  requests.push({ method: 'GET', url: '/no/such/route', public: false })
  const callers: Array<{ who: string, headers: Record<string, string> }> = [
    { who: 'no key', headers: {} },
    { who: 'a wrong bearer key', headers: { authorization: 'Bearer sk-wrong' } },
    { who: 'a wrong x-api-key', headers: { 'x-api-key': 'sk-wrong' } },
  ]
  const problems: string[] = []
  for (const request of requests) {
    for (const caller of callers) {
      const preflight: Record<string, string> = request.method === 'OPTIONS' ? { origin: 'http://localhost', 'access-control-request-method': 'POST' } : {}
      const hasBody = !['GET', 'HEAD', 'OPTIONS'].includes(request.method)
      const res = await fetch(`${url}${sample(request.url)}`, {
        method: request.method,
        headers: { ...caller.headers, ...preflight, ...(hasBody ? { 'content-type': 'application/json' } : {}) },
        ...(hasBody ? { body: JSON.stringify({ model: 'acme/broken', name: 'acme/broken', messages: [{ role: 'user', content: 'hi' }], prompt: 'hi', input: 'hi' }) } : {}),
      })
      const answer = `${[...res.headers].map(([k, v]) => `${k}: ${v}`).join('\n')}\n\n${await res.text()}`
      const label = `${request.method} ${sample(request.url)} with ${caller.who}`
      if (!request.public && res.status !== 401) problems.push(`${label}: ${res.status}, not 401`)
      if (request.public && res.status === 401) problems.push(`${label}: 401 on a public route`)
      for (const secret of secrets) if (answer.includes(secret.text)) problems.push(`${label}: names ${secret.what} (${secret.text})`)
    }
  }
  t.same(problems, [], `${requests.length * callers.length} requests: none answered past its key, none named what it should not`)
  const probe = await (await fetch(`${url}/readyz`)).json() as { status: string, reasons: string[] }
  t.same(probe, { status: 'not ready', reasons: ['models named for preloading are not loaded yet (details with an API key)'] }, 'a probe without a key hears what kind of problem there is')
})
