import t from 'tap'
import { post, sseEvents } from '../../helpers/inference.js'
import { conversation, MODEL, serveBack, serveFront } from './two-backs.js'

// Streams relayed to an upstream keep their connection for the next stream (llama-server closes its own; an
// upstream llamagate, vLLM or Ollama does not): no connect, and over https no handshake, per stream. A connection the
// upstream closed while it was idle is not a failure: the stream goes on a new one.

t.test('streams to an upstream reuse one connection; one the upstream closed while idle is replaced unseen', async (t) => {
  const a = await serveBack(t)
  const b = await serveBack(t)
  const front = await serveFront(t, a, b)
  let connections = 0
  for (const back of [a, b]) back.app.server.on('connection', () => { connections++ })
  const stream = async (n: number): Promise<unknown[]> => {
    const res = await post(`${front.url}/v1/chat/completions`, { model: MODEL, messages: conversation(n), max_tokens: 2, stream: true })
    t.equal(res.status, 200)
    return sseEvents(res)
  }
  // One conversation: every stream to the same back.
  for (let i = 0; i < 5; i++) t.equal((await stream(0)).at(-1), '[DONE]', `stream ${i} whole`)
  t.equal(connections, 1, 'five streams, one connection to the back')

  // The back closes its idle connections (a restart, its keep-alive timeout): the next stream connects again.
  for (const back of [a, b]) back.app.server.closeIdleConnections()
  t.equal((await stream(0)).at(-1), '[DONE]', 'the stream after the upstream hung up is answered')
  t.equal(connections, 2, 'on a new connection')

  // An error answer the back sends on a kept connection (a prompt past its 4,096-token context) is read whole, and the
  // connection serves the next stream.
  const long = [{ role: 'user', content: 'question 0 '.repeat(3000) }]
  const refused = await post(`${front.url}/v1/chat/completions`, { model: MODEL, messages: long, max_tokens: 2, stream: true })
  const said = await refused.text()
  t.equal(refused.status, 400, `the back's refusal, relayed: ${said.slice(0, 200)}`)
  t.match(said, /context/)
  t.equal((await stream(0)).at(-1), '[DONE]', 'the next stream is answered')
  t.equal(connections, 2, 'on the same connection')
})
