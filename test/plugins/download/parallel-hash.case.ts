import { createHash, randomBytes } from 'node:crypto'
import t from 'tap'
import { ParallelHash } from '../../../plugins/download/parallel-hash.js'
import { hashFor, PARALLEL_HASH_MIN_BYTES } from '../../../plugins/download/stream-hash.js'

t.test('the digest is the SHA-256 of every chunk, in order, whatever their sizes', async (t) => {
  const chunks = [0, 1, 63, 64 << 10, 1 << 20, 7, 3 << 20].map((n) => randomBytes(n))
  const hash = new ParallelHash()
  for (const chunk of chunks) if (!hash.update(chunk)) await hash.drained()
  t.equal(await hash.digest(), createHash('sha256').update(Buffer.concat(chunks)).digest('hex'))
  await hash.discard()
})

t.test('it says when it is far behind, and drained() waits until it has caught up', async (t) => {
  const hash = new ParallelHash()
  const chunk = randomBytes(1 << 20)
  const expected = createHash('sha256')
  let refused = 0
  for (let i = 0; i < 40; i++) {
    expected.update(chunk)
    if (!hash.update(chunk)) {
      refused++
      await hash.drained()
    }
  }
  t.ok(refused > 0, `update() asked to wait ${refused} time(s) while 40 MiB went in at once`)
  t.equal(await hash.digest(), expected.digest('hex'))
  await hash.discard()
})

t.test('a hash given up ends its thread', async (t) => {
  const hash = new ParallelHash()
  hash.update(randomBytes(1024))
  await hash.discard()
  await t.rejects(hash.digest(), /the hashing thread ended/)
})

t.test('a file under 32 MiB is hashed on the calling thread, a larger one on a thread of its own; the digest is the same', async (t) => {
  const chunks = [randomBytes(1 << 20), randomBytes(5), randomBytes(64 << 10)]
  const expected = createHash('sha256').update(Buffer.concat(chunks)).digest('hex')
  const small = hashFor(PARALLEL_HASH_MIN_BYTES - 1)
  t.notOk(small instanceof ParallelHash, 'small: no thread started')
  for (const chunk of chunks) t.equal(small.update(chunk), true, 'never behind')
  await small.drained()
  t.equal(await small.digest(), expected)
  await small.discard()
  const large = hashFor(PARALLEL_HASH_MIN_BYTES)
  t.ok(large instanceof ParallelHash, 'large: a worker thread')
  for (const chunk of chunks) if (!large.update(chunk)) await large.drained()
  t.equal(await large.digest(), expected)
  await large.discard()
})
