import { createHash } from 'node:crypto'
import { parentPort } from 'node:worker_threads'

/**
 * The other end of ParallelHash: SHA-256 of the chunks it is sent, in order. It acknowledges what it has
 * hashed so that the sender can hold back when it runs ahead, and answers `null` with the digest.
 */
const hash = createHash('sha256')
parentPort!.on('message', (chunk: Uint8Array | null) => {
  if (chunk === null) {
    parentPort!.postMessage({ digest: hash.digest('hex') })
    parentPort!.close()
    return
  }
  hash.update(chunk)
  parentPort!.postMessage({ hashed: chunk.byteLength })
})
