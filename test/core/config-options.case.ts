import t from 'tap'
import { ConfigError, loadConfig, resolveConfig } from '../../core/platform/config.js'

t.test('a typo among options in config.yaml stops the start, naming the key', async (t) => {
  t.throws(() => resolveConfig([{ source: 'config.yaml', values: { default_options: { num_threadz: 2 } } }]), ConfigError)
  t.throws(() => resolveConfig([{ source: 'config.yaml', values: { default_options: { num_threadz: 2 } } }]), /num_threadz/)
  t.throws(() => resolveConfig([{ source: 'config.yaml', values: { models: { 'acme/x': { options: { temprature: 0.1 } } } } }]), /temprature/)
  t.equal(resolveConfig([{ source: 'config.yaml', values: { default_options: { num_thread: 2 } } }]).defaultOptions.num_thread, 2, 'known keys pass')
})

t.test('default_options.num_predict in config.yaml replaces the shipped max_tokens: one setting under two names', async (t) => {
  const options = resolveConfig([{ source: 'config.yaml', values: { default_options: { num_predict: 100 } } }]).defaultOptions
  t.equal(options.num_predict, 100)
  t.equal(options.max_tokens, undefined, 'the shipped max_tokens 2048 no longer shadows it')
  t.equal(resolveConfig([{ source: 'config.yaml', values: { default_options: { max_tokens: 64 } } }]).defaultOptions.max_tokens, 64)
  t.equal(resolveConfig([]).defaultOptions.max_tokens, 2048, 'the shipped default stays when nothing is said')
})

t.test('LLAMAGATE_NUM_CTX sets the context a model starts with (default_options.num_ctx), over config.yaml', async (t) => {
  t.equal(loadConfig({}, { LLAMAGATE_NUM_CTX: '8192' }).defaultOptions.num_ctx, 8192)
  t.equal(loadConfig({}, {}).defaultOptions.num_ctx, 4096, 'the shipped 4096 otherwise')
  t.throws(() => loadConfig({}, { LLAMAGATE_NUM_CTX: 'lots' }), /default_options\.num_ctx = "lots" is not allowed.*LLAMAGATE_NUM_CTX|environment/)
})
