import { createServer } from 'node:http'
import t from 'tap'
import { Instance } from '../../../plugins/scheduler/instance.js'
import type { ResolvedOptions } from '../../../core/request-options.js'
import type { RuntimeProcess } from '../../../plugins/scheduler/ports.js'

// The pool for unstreamed answers is made on first use (streamed requests never need it); these check that
// it is one pool, reaches the runtime, and that nothing asked for after the unload opens a connection.
t.test('the pool is made once, on first use, and is closed for good by closePool()', async (t) => {
  let requests = 0
  const server = createServer((_req, res) => { requests++; res.end('ok') })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  const port = (server.address() as { port: number }).port
  const instance = new Instance({ name: 'acme/tiny', format: 'gguf', size: 1 }, { num_parallel: 2 } as ResolvedOptions['load'], 1, 1000)
  instance.process = { baseUrl: `http://127.0.0.1:${port}`, socketPath: null } as RuntimeProcess
  const pool = instance.pool
  t.equal(instance.pool, pool, 'the same pool each time')
  const answer = await pool.request({ path: '/', method: 'GET' })
  t.equal(await answer.body.text(), 'ok')
  await instance.closePool()
  await t.rejects(instance.pool.request({ path: '/', method: 'GET' }), { name: 'ClientDestroyedError' })
  const fresh = new Instance({ name: 'acme/tiny', format: 'gguf', size: 1 }, { num_parallel: 2 } as ResolvedOptions['load'], 1, 1000)
  fresh.process = instance.process
  await fresh.closePool()
  await t.rejects(fresh.pool.request({ path: '/', method: 'GET' }), { name: 'ClientDestroyedError' }, 'a pool first asked for after the unload comes closed')
  t.equal(requests, 1, 'only the request made before the unload reached the runtime')
})
