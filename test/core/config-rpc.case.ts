import t from 'tap'
import { checkConfig } from '../../core/platform/config-checks.js'
import { ConfigError, resolveConfig } from '../../core/platform/config.js'
import { builtinManifests } from '../../core/platform/plugin-loader.js'
import { addressKind, formatHostPort, parseHostPort } from '../../core/base/host-port.js'

// config.yaml's rpc.workers and models.<name>.rpc: what is refused at start, and why.

const load = (values: Record<string, unknown>) => resolveConfig([{ source: 'config.yaml', values }])

t.test('workers on loopback and private networks load; names and splits reach the model', async (t) => {
  const config = load({
    rpc: { workers: [{ name: 'a', endpoint: '127.0.0.1:50052' }, { name: 'b', endpoint: '10.1.2.3:50053' }, { name: 'c', endpoint: '[fd00::5]:50052' }, { name: 'd', endpoint: 'worker-0.rpc:50052' }] },
    models: { 'acme/big': { rpc: ['a', 'b'], tensor_split: [1, 3] } },
  })
  t.same(config.rpc.workers.map((w) => [w.name, w.endpoint.host, w.endpoint.port, w.allowPublic]), [['a', '127.0.0.1', 50052, false], ['b', '10.1.2.3', 50053, false], ['c', 'fd00::5', 50052, false], ['d', 'worker-0.rpc', 50052, false]])
  t.same(config.models.get('acme/big'), { rpc: ['a', 'b'], tensorSplit: [1, 3] })
  t.same(load({}).rpc.workers, [], 'none by default')
})

t.test('a public address is refused unless the worker allows it, with the reason and the way out', async (t) => {
  const values = { rpc: { workers: [{ name: 'far', endpoint: '203.0.113.7:50052' }] } }
  t.throws(() => load(values), ConfigError)
  t.throws(() => load(values), /rpc\.workers\[0\] \(far\): endpoint 203\.0\.113\.7:50052 is a public address, and llama\.cpp's RPC protocol has no authentication .*set allow_public: true on this worker/)
  t.throws(() => load({ rpc: { workers: [{ name: 'v6', endpoint: '[2001:db8::1]:50052' }] } }), /public address/, 'IPv6 too')
  t.same(load({ rpc: { workers: [{ name: 'far', endpoint: '203.0.113.7:50052', allow_public: true }] } }).rpc.workers[0]!.allowPublic, true, 'allowed when said')
})

t.test('mistakes: a bad endpoint, a name used twice, a model naming an unknown worker, a split of zeros, the flags in args', async (t) => {
  t.throws(() => load({ rpc: { workers: [{ name: 'a', endpoint: '127.0.0.1' }] } }), /endpoint "127\.0\.0\.1" is not host:port/)
  t.throws(() => load({ rpc: { workers: [{ name: 'a', endpoint: '127.0.0.1:70000' }] } }), /is not host:port/)
  t.throws(() => load({ rpc: { workers: [{ name: 'a', endpoint: '127.0.0.1:1' }, { name: 'a', endpoint: '127.0.0.1:2' }] } }), /the name is used twice/)
  t.throws(() => load({ rpc: { workers: [{ name: 'a', endpoint: '127.0.0.1:1' }] }, models: { 'acme/m': { rpc: ['a', 'z'] } } }), /models\.acme\/m\.rpc names "z", not among rpc\.workers \(a\)/)
  t.throws(() => load({ models: { 'acme/m': { tensor_split: [0, 0] } } }), /tensor_split gives every device 0/)
  t.throws(() => load({ models: { 'acme/m': { tensor_split: [-1] } } }), /tensor_split/)
  t.throws(() => load({ rpc: { workers: [{ name: 'bad name', endpoint: '127.0.0.1:1' }] } }), /name/)
  // The llama-server arguments are the runtimes plugin's to check (its config check, run before the app starts).
  const checked = async (values: Record<string, unknown>): Promise<unknown> => checkConfig(load(values), await builtinManifests())
  await t.rejects(checked({ models: { 'acme/m': { args: ['--rpc', '127.0.0.1:1'] } } }), /--rpc.*rpc\.workers/)
  await t.rejects(checked({ models: { 'acme/m': { args: ['--tensor-split', '1,1'] } } }), /--tensor-split.*tensor_split/)
})

t.test('endpoints: parsed, written back for --rpc, and classified', async (t) => {
  t.same(parseHostPort('[::1]:5'), { host: '::1', port: 5 })
  t.equal(parseHostPort('a:b:1'), null)
  t.equal(parseHostPort('host:0'), null)
  t.equal(formatHostPort({ host: '::1', port: 5 }), '[::1]:5')
  t.equal(formatHostPort({ host: 'box', port: 5 }), 'box:5')
  t.same(['127.0.0.9', '::1', 'localhost', '192.168.1.2', '172.20.0.1', '100.100.1.1', 'fe80::1', '::ffff:10.0.0.1', '8.8.8.8', '::ffff:8.8.8.8', '0.0.0.0', 'box.lan'].map(addressKind),
    ['loopback', 'loopback', 'loopback', 'private', 'private', 'private', 'private', 'private', 'public', 'public', 'public', 'name'])
})
