import { createServer, type Server, type Socket } from 'node:net'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { healthStatus } from '../../../runtimes/process/health-probe.js'
import { tempDir } from '../../helpers/app.js'

// llama-server itself answers the probe in the supervisor's tests (test/runtimes/process/llama-server.case.ts); these
// servers give the answers it does not give on demand: partial, slow, none, not HTTP.
async function listen (t: Test, onConnection: (socket: Socket, request: () => string) => void, path?: string): Promise<{ port: number, server: Server }> {
  const server = createServer((socket) => {
    let request = ''
    socket.on('data', (d) => { request += d })
    socket.on('error', () => {})
    onConnection(socket, () => request)
  })
  await new Promise<void>((resolve) => path !== undefined ? server.listen(path, resolve) : server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  const address = server.address()
  return { port: typeof address === 'object' && address !== null ? address.port : 0, server }
}

t.test('the status code of the answer, over a port or a Unix socket; the request asks for /health', async (t) => {
  let seen = ''
  const { port } = await listen(t, (socket, request) => {
    socket.once('data', () => { seen = request(); socket.end('HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n') })
  })
  t.equal(await healthStatus({ port }, 5000), 503)
  t.match(seen, /^GET \/health HTTP\/1\.1\r\n/)
  const socketPath = join(await tempDir(t), 'h.sock')
  await listen(t, (socket) => { socket.once('data', () => socket.end('HTTP/1.1 200 OK\r\n\r\n')) }, socketPath)
  t.equal(await healthStatus({ socketPath }, 5000), 200)
})

t.test('a status line split over several packets is read whole', async (t) => {
  const { port } = await listen(t, (socket) => {
    socket.once('data', () => {
      socket.write('HTTP/1.')
      setTimeout(() => socket.write('1 2'), 20)
      setTimeout(() => socket.end('00 OK\r\n\r\n'), 40)
    })
  })
  t.equal(await healthStatus({ port }, 5000), 200)
})

t.test('nothing listening, no answer, a closed connection, something not HTTP: rejected, saying which', async (t) => {
  const { port: unused, server } = await listen(t, () => {})
  await new Promise<void>((resolve) => server.close(() => resolve()))
  await t.rejects(healthStatus({ port: unused }, 5000), { code: 'ECONNREFUSED' })
  await t.rejects(healthStatus({ socketPath: join(await tempDir(t), 'none.sock') }, 5000), { code: 'ENOENT' })
  const silent = await listen(t, () => {})
  await t.rejects(healthStatus({ port: silent.port }, 100), /no answer to GET \/health within 100 ms/)
  const closing = await listen(t, (socket) => { socket.once('data', () => socket.end()) })
  await t.rejects(healthStatus({ port: closing.port }, 5000), /closed before a status line/)
  const garbage = await listen(t, (socket) => { socket.once('data', () => socket.end('SSH-2.0-OpenSSH\r\n')) })
  await t.rejects(healthStatus({ port: garbage.port }, 5000), /not an HTTP answer: "SSH-2\.0-OpenSSH/)
})
