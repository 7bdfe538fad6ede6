import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { parse as parseYaml } from 'yaml'
import { readFileSync } from 'node:fs'
import { ConfigError, loadConfig, resolveConfig } from '../../core/platform/config.js'
import { configShape } from '../../core/platform/config-sections.js'
import { SHIPPED_CONFIG } from '../../core/base/paths.js'
import { tempDir } from '../helpers/app.js'

t.test('the shipped config.yaml says exactly what the built-in defaults are', async (t) => {
  const fromFile = loadConfig({ config: SHIPPED_CONFIG }, {})
  const builtIn = resolveConfig([])
  t.same({ ...fromFile, configFile: null }, builtIn)
  t.equal(builtIn.host, '127.0.0.1')
  t.equal(builtIn.port, 11435)
  t.equal(builtIn.keepAliveMs, 5 * 60_000)
  t.same(builtIn.defaultOptions, {
    temperature: 0.7, top_p: 0.9, top_k: 40, max_tokens: 2048, seed: -1, num_ctx: 4096,
    num_parallel: 4, cache_type_k: 'f16', cache_type_v: 'f16', dtype: 'f16',
  })
  // Every top-level key of the schema, the core's and the plugins' sections', is written out (and so commented) in
  // config.yaml, and so is every key of `limits`.
  const shipped = parseYaml(readFileSync(SHIPPED_CONFIG, 'utf8')) as { limits: object }
  const { schema } = configShape()
  t.same(Object.keys(shipped).sort(), Object.keys(schema.properties).sort())
  t.same(Object.keys(shipped.limits).sort(), Object.keys((schema.properties.limits as typeof schema).properties).sort())
  // `models` is empty there: each key of a model's entry, the core's and the sections', is explained in its comment.
  const models = schema.properties.models as unknown as { patternProperties: Record<string, typeof schema> }
  const modelKeys = Object.keys(Object.values(models.patternProperties)[0]!.properties)
  t.ok(modelKeys.length > 2, `${modelKeys.length} keys under models.<name>`)
  const text = readFileSync(SHIPPED_CONFIG, 'utf8')
  t.same(modelKeys.filter((key) => !new RegExp(`^#\\s+${key}\\s`, 'm').test(text)), [], 'config.yaml explains each')
})

t.test('precedence: defaults < config file < environment < flags', async (t) => {
  const dir = await tempDir(t)
  const file = join(dir, 'config.yaml')
  await writeFile(file, 'port: 1000\nhost: 0.0.0.0\nkeep_alive: 10m\nmodels_dir: ./m\nhub:\n  endpoint: http://file.example\n')
  const fileOnly = loadConfig({ config: file }, {})
  t.equal(fileOnly.port, 1000)
  t.equal(fileOnly.host, '0.0.0.0')
  t.equal(fileOnly.keepAliveMs, 600_000)
  t.equal(fileOnly.modelsDir, join(dir, 'm'), 'relative paths are relative to the config file')
  t.equal(fileOnly.limits.queueLength, 64, 'keys the file leaves out keep their defaults')
  t.equal(fileOnly.configFile, file)

  const env = { LLAMAGATE_PORT: '2000', LLAMAGATE_KEEP_ALIVE: '30s', HF_ENDPOINT: 'http://env.example', HF_TOKEN: 'hf_x', LLAMAGATE_API_KEYS: 'a, b' }
  const withEnv = loadConfig({ config: file }, env)
  t.equal(withEnv.port, 2000)
  t.equal(withEnv.host, '0.0.0.0', 'the file still wins over defaults')
  t.equal(withEnv.keepAliveMs, 30_000)
  t.equal(withEnv.hub.endpoint, 'http://env.example')
  t.equal(withEnv.hub.token, 'hf_x')
  t.same(withEnv.auth.apiKeys, ['a', 'b'])

  const withFlags = loadConfig({ config: file, port: '3000', host: '127.0.0.2', models: '/srv/models' }, env)
  t.equal(withFlags.port, 3000)
  t.equal(withFlags.host, '127.0.0.2')
  t.equal(withFlags.modelsDir, '/srv/models')

  const viaEnvFile = loadConfig({}, { LLAMAGATE_CONFIG: file })
  t.equal(viaEnvFile.port, 1000, 'LLAMAGATE_CONFIG names the file')
})

t.test('nested keys merge instead of replacing whole sections', async (t) => {
  const config = resolveConfig([{ source: 'x', values: { default_options: { temperature: 0.1 }, limits: { queue_length: 3 } } }])
  t.equal(config.defaultOptions.temperature, 0.1)
  t.equal(config.defaultOptions.num_ctx, 4096)
  t.equal(config.limits.queueLength, 3)
  t.equal(config.limits.maxLoadedModels, 3)
})

t.test('LLAMAGATE_ORIGINS adds to the configured origins', async (t) => {
  const config = loadConfig({ config: SHIPPED_CONFIG }, { LLAMAGATE_ORIGINS: 'https://app.example, chrome-extension://*' })
  t.ok(config.cors.origins.includes('http://localhost:*'))
  t.ok(config.cors.origins.includes('https://app.example'))
  t.ok(config.cors.origins.includes('chrome-extension://*'))
})

// Each bad value: the message names the key, the value, where it came from and what is allowed.
const BAD_VALUES: Array<[string, Record<string, unknown>, RegExp[]]> = [
  ['port too large', { port: 70000 }, [/port = 70000/, /<= 65535/]],
  ['port not a number', { port: 'eighty' }, [/port = "eighty"/, /integer/]],
  ['unknown key', { prot: 1 }, [/prot is not a known key/, /allowed keys here: host, port/]],
  ['unknown nested key', { limits: { queue: 1 } }, [/limits\.queue is not a known key/, /queue_length/]],
  ['bad log level', { log_level: 'loud' }, [/log_level = "loud"/, /one of "fatal", "error"/]],
  ['bad runtime', { runtime: 'tpu' }, [/runtime = "tpu"/, /"cuda", "rocm", "metal", "vulkan", "cpu"/]],
  ['bad keep_alive', { keep_alive: 'soon' }, [/keep_alive = "soon"/, /duration/]],
  ['bad load_timeout', { limits: { load_timeout: '5 minutes' } }, [/limits\.load_timeout/, /duration/]],
  ['bad body size', { limits: { body_size: 'huge' } }, [/limits\.body_size = "huge"/, /size/]],
  ['zero loaded models', { limits: { max_loaded_models: 0 } }, [/limits\.max_loaded_models = 0/, />= 1/]],
  ['temperature below 0', { default_options: { temperature: -1 } }, [/default_options\.temperature = -1/, />= 0/]],
  ['top_p above 1', { default_options: { top_p: 2 } }, [/default_options\.top_p = 2/, /<= 1/]],
  ['num_ctx too small', { default_options: { num_ctx: 8 } }, [/default_options\.num_ctx = 8/, />= 16/]],
  ['num_parallel too large', { default_options: { num_parallel: 65 } }, [/default_options\.num_parallel = 65/, /<= 64/]],
  ['bad cache type', { default_options: { cache_type_k: 'q3' } }, [/cache_type_k = "q3"/, /"f32", "f16"/]],
  ['bad stream format', { stream_format: 'xml' }, [/stream_format = "xml"/, /"sse", "ndjson"/]],
  ['hub endpoint not a URL', { hub: { endpoint: 'ftp://x' } }, [/hub\.endpoint = "ftp:\/\/x"/, /pattern/]],
  ['api keys not a list', { auth: { api_keys: 'secret' } }, [/auth\.api_keys = "secret"/, /array/]],
  ['plugin without path', { plugins: [{ options: {} }] }, [/plugins\.0/, /path/]],
  ['metrics.listen without a port', { metrics: { listen: '127.0.0.1' } }, [/metrics\.listen = "127\.0\.0\.1"/, /address and port such as/]],
  ['metrics.listen port 0', { metrics: { listen: '127.0.0.1:0' } }, [/metrics\.listen = "127\.0\.0\.1:0"/, /port must be 1-65535 \(from \/etc\/llamagate\.yaml\)/]],
]

t.test('metrics.listen: an address and port, IPv6 in brackets', async (t) => {
  t.same(resolveConfig([]).metrics, { enabled: true, listen: null })
  t.same(resolveConfig([{ source: 'test', values: { metrics: { listen: '[::1]:9464' } } }]).metrics.listen, { host: '::1', port: 9464 })
  t.same(resolveConfig([{ source: 'test', values: { metrics: { listen: 'localhost:9464' } } }]).metrics.listen, { host: 'localhost', port: 9464 })
})

for (const [what, values, patterns] of BAD_VALUES) {
  t.test(`a bad config is refused with a clear message: ${what}`, async (t) => {
    const err = await t.rejects(async () => resolveConfig([{ source: '/etc/llamagate.yaml', values }]))
    t.type(err, ConfigError)
    const message = (err as Error).message
    for (const pattern of patterns) t.match(message, pattern)
    t.notMatch(message, /\n\s+at /, 'no stack trace')
  })
}

t.test('errors say which layer a bad value came from', async (t) => {
  t.throws(() => loadConfig({ config: SHIPPED_CONFIG }, { LLAMAGATE_PORT: 'abc' }), /port = "abc".*\(from LLAMAGATE_PORT\)/)
  t.throws(() => loadConfig({ config: SHIPPED_CONFIG, port: '99999' }, {}), /port = 99999.*\(from command line\)/)
  const dir = await tempDir(t)
  const file = join(dir, 'c.yaml')
  await writeFile(file, 'port: -5\n')
  t.throws(() => loadConfig({ config: file }, {}), new RegExp(`port = -5.*\\(from ${file.replace(/[.]/g, '\\.')}\\)`))
})

t.test('a config file that is missing, not YAML, or not a mapping is refused', async (t) => {
  const dir = await tempDir(t)
  t.throws(() => loadConfig({ config: join(dir, 'nope.yaml') }, {}), /does not exist/)
  const broken = join(dir, 'broken.yaml')
  await writeFile(broken, 'port: [1, 2\n')
  t.throws(() => loadConfig({ config: broken }, {}), /not valid YAML/)
  const list = join(dir, 'list.yaml')
  await writeFile(list, '- a\n- b\n')
  t.throws(() => loadConfig({ config: list }, {}), /must hold a mapping/)
  const empty = join(dir, 'empty.yaml')
  await writeFile(empty, '# nothing\n')
  t.equal(loadConfig({ config: empty }, {}).port, 11435, 'an empty file means the defaults')
})
