import { createServer } from 'node:http'
import t from 'tap'
import { HttpPool } from '../../../runtimes/endpoint/http-pool.js'

// The pool both clients share (llama-server's, an upstream's): every path goes under the address's own.

const never = new AbortController().signal

t.test('POSTs and GETs go under the address\'s path, with the headers given and no others', async (t) => {
  const received: Array<[string, string, string | null]> = []
  const server = createServer((req, res) => {
    received.push([req.method ?? '', req.url ?? '', req.headers.authorization ?? null])
    res.end(req.url === '/o/metrics' ? 'up 1\n' : '{}')
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()) }))
  const baseUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}/o`
  const bare = new HttpPool({ address: { baseUrl, socketPath: null }, connections: 1 })
  const keyed = new HttpPool({ address: { baseUrl, socketPath: null }, connections: 1, headers: { authorization: 'Bearer k' } })
  t.teardown(() => Promise.all([bare.close(), keyed.close()]))
  t.equal(await bare.read(await bare.post('/v1/chat/completions', '{}', never)), '{}')
  t.equal(await bare.get('/metrics', never), 'up 1\n')
  t.equal(await keyed.get('/metrics', never), 'up 1\n')
  t.same(received, [['POST', '/o/v1/chat/completions', null], ['GET', '/o/metrics', null], ['GET', '/o/metrics', 'Bearer k']])
})
