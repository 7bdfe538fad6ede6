import t from 'tap'
import { checkConfig } from '../../../core/platform/config-checks.js'
import { ConfigError, resolveConfig, type Config } from '../../../core/platform/config.js'
import { builtinManifests } from '../../../core/platform/plugin-loader.js'
import { isPathItem, mapModelFiles, ownedFlagProblems } from '../../../runtimes/extra-args.js'

t.test('owned flags are named with what to do instead; the rest pass', async (t) => {
  t.same(ownedFlagProblems(['--model-draft', 'acme/draft', '--draft-max', '8', '--flash-attn', 'on', '-sm', 'row']), [])
  t.same(ownedFlagProblems(['--port', '9', '--ctx-size=8192', '-t', '4', '--api-key', 'x', '--embeddings']), [
    '--port is set by the gateway: the gateway decides how it reaches llama-server',
    '--ctx-size is set by the gateway: set options.num_ctx (per request, or in models.<name>.options)',
    '-t is set by the gateway: set options.num_thread',
    '--api-key is set by the gateway: the gateway decides how it reaches llama-server',
    '--embeddings is set by the gateway: what a model serves (chat, embeddings, reranking) follows from its GGUF and the request',
  ])
  t.same(ownedFlagProblems(['--override-kv', '-1']), [], 'a negative number is a value, not a flag')
})

t.test('model file items: names and paths told apart; each mapped, :SCALE kept, other values untouched', async (t) => {
  t.ok(isPathItem('./a.gguf'))
  t.ok(isPathItem('/abs/adapter'))
  t.ok(isPathItem('~/x'))
  t.ok(isPathItem('adapter.GGUF'))
  t.notOk(isPathItem('acme/draft'))
  const mapped = mapModelFiles(
    ['--model-draft', 'acme/draft', '--lora', 'a,b', '--lora-scaled', 'c:0.5,d:1', '--control-vector=e', '--draft-max', '8', '--alias-ish', 'acme/x'],
    (item) => `<${item}>`)
  t.same(mapped, ['--model-draft', '<acme/draft>', '--lora', '<a>,<b>', '--lora-scaled', '<c>:0.5,<d>:1', '--control-vector=<e>', '--draft-max', '8', '--alias-ish', 'acme/x'])
  t.same(mapModelFiles(['-md'], (i) => `<${i}>`), ['-md'], 'a flag with no value is left for llama-server to refuse')
})

t.test('config.yaml models.<name>.args: owned flags refused at load, paths resolved against the config file', async (t) => {
  // The core resolves config.yaml; the runtimes plugin checks the llama-server arguments in it (its config check).
  const load = async (models: unknown): Promise<Config> => checkConfig(resolveConfig([{ source: '/etc/llamagate/config.yaml', values: { models } }], '/etc/llamagate/config.yaml'), await builtinManifests())
  const err = await load({ 'acme/chat': { args: ['--host', '0.0.0.0', '-np', '8'] } }).then(() => null, (e: unknown) => e) as ConfigError
  t.type(err, ConfigError)
  t.match(err.message, 'models.acme/chat.args: --host is set by the gateway')
  t.match(err.message, 'models.acme/chat.args: -np is set by the gateway: set options.num_parallel')
  const config = await load({ 'acme/chat': { args: ['--model-draft', 'acme/draft', '--lora', './adapters/style.gguf', '--draft-max', '8'], preload: true, keep_alive: '10m' } })
  t.same(config.models.get('acme/chat'), {
    args: ['--model-draft', 'acme/draft', '--lora', '/etc/llamagate/adapters/style.gguf', '--draft-max', '8'],
    preload: true,
    keepAliveMs: 600_000,
  })
  t.equal(config.shutdown.drainTimeoutMs, 30_000, 'drain_timeout defaults to 30 s')
  await t.rejects(load({ 'acme/chat': { args: '--flash-attn on' } }), /models\.acme\/chat\.args = "--flash-attn on" is not allowed: must be array/, 'args must be a list, and the key is written as in config.yaml')
})
