import { connect } from 'node:net'
import t from 'tap'
import { post, serveTinyModels } from '../../helpers/inference.js'
import { until } from '../../helpers/until.js'

// A drain refuses new requests at the door and serves the ones already through it, even one that reaches the
// scheduler only after the drain began (its body was still arriving).

t.test('a request accepted before the drain is answered, though its body ends after; a new one is refused', async (t) => {
  const { app, url } = await serveTinyModels(t, ['acme/tiny'])
  const { port } = new URL(url)
  const body = JSON.stringify({ model: 'acme/tiny', prompt: 'hi', stream: false, options: { num_predict: 4 } })
  const socket = connect({ host: '127.0.0.1', port: Number(port) })
  await new Promise((resolve) => socket.once('connect', resolve))
  let answer = ''
  socket.setEncoding('utf8')
  socket.on('data', (d: string) => { answer += d })
  // The headers and half the body: the request is through the door (counted in flight), its handler not yet run.
  socket.write(`POST /api/generate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body.slice(0, 20)}`)
  await until('the request counted in flight', () => app.lifecycle.inFlight === 1, 5000)
  const drain = app.lifecycle.drain(30_000)
  t.equal(app.lifecycle.draining, true, 'draining')
  const refused = await post(`${url}/api/generate`, { model: 'acme/tiny', prompt: 'hi', stream: false })
  t.equal(refused.status, 503, 'a request that comes now is refused')
  t.match(await refused.json(), { error: /shutting down and takes no new work/ })
  socket.write(body.slice(20))
  t.equal(await drain, 'drained', 'the drain waits for the accepted request, and it ends')
  await until('the answer read', () => answer.includes('"done":true') || socket.closed, 10_000)
  t.match(answer, /^HTTP\/1\.1 200 /, `the accepted request is answered: ${answer.split('\r\n')[0]}`)
  t.match(answer, /"done":true/)
  socket.destroy()
})
