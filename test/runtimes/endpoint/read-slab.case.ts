import { createHash, randomBytes } from 'node:crypto'
import { connect, createServer, type Socket } from 'node:net'
import t from 'tap'
import { ReadSlab } from '../../../runtimes/endpoint/read-slab.js'

t.test('reads are handed out front to back; a new block when too little is free; earlier bytes never reused', async (t) => {
  const slab = new ReadSlab(1024, 256)
  const first = slab.next()
  t.equal(first.length, 1024)
  const a = slab.take(first, 700)
  a.fill(0xaa)
  const second = slab.next()
  t.equal(second.length, 324, 'the rest of the block')
  const b = slab.take(second, 100)
  b.fill(0xbb)
  const third = slab.next()
  t.equal(third.length, 1024, 'a fresh block: 224 bytes free is under the minimum')
  slab.take(third, 1024).fill(0xcc)
  t.ok(a.every((x) => x === 0xaa) && b.every((x) => x === 0xbb), 'bytes already taken are left as they were')
  t.equal(b.byteOffset - a.byteOffset, 700, 'the second read follows the first in the same block')
})

t.test('a socket read through onread into a slab, paused and resumed on the way: every byte, in order, each slice intact', async (t) => {
  const sent = randomBytes(6 << 20)
  const server = createServer((socket) => {
    // Many writes of odd sizes, as a runtime writes events.
    let at = 0
    const more = (): void => {
      while (at < sent.length) {
        const end = Math.min(sent.length, at + 1 + Math.floor(Math.random() * 3000))
        const ok = socket.write(sent.subarray(at, end))
        at = end
        if (!ok) { socket.once('drain', more); return }
      }
      socket.end()
    }
    more()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  const port = (server.address() as { port: number }).port

  const slab = new ReadSlab()
  const slices: Buffer[] = []
  let received = 0
  let paused = false
  const socket: Socket = connect({
    host: '127.0.0.1',
    port,
    onread: {
      buffer: () => slab.next(),
      callback: (n, space) => {
        const bytes = slab.take(space as Buffer, n)
        slices.push(bytes)
        received += n
        // Pause once, a megabyte in, as the relay does when the client's socket is full.
        if (!paused && received > 1 << 20) {
          paused = true
          socket.pause()
          setTimeout(() => socket.resume(), 200)
        }
        return true
      },
    },
  })
  await new Promise<void>((resolve, reject) => { socket.once('end', resolve); socket.once('error', reject) })
  socket.destroy()
  t.ok(paused)
  t.ok(slices.length > 20, `${slices.length} reads`)
  t.equal(received, sent.length)
  const digest = (b: Buffer): string => createHash('sha256').update(b).digest('hex')
  t.equal(digest(Buffer.concat(slices)), digest(sent), 'the slices, kept to the end, still hold what was sent')
})
