import t from 'tap'
import { ConfigError, resolveConfig } from '../../core/config.js'

t.test('a typo among options in config.yaml stops the start, naming the key', async (t) => {
  t.throws(() => resolveConfig([{ source: 'config.yaml', values: { default_options: { num_threadz: 2 } } }]), ConfigError)
  t.throws(() => resolveConfig([{ source: 'config.yaml', values: { default_options: { num_threadz: 2 } } }]), /num_threadz/)
  t.throws(() => resolveConfig([{ source: 'config.yaml', values: { models: { 'acme/x': { options: { temprature: 0.1 } } } } }]), /temprature/)
  t.equal(resolveConfig([{ source: 'config.yaml', values: { default_options: { num_thread: 2 } } }]).defaultOptions.num_thread, 2, 'known keys pass')
})
