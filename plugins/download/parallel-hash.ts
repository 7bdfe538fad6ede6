import { Worker } from 'node:worker_threads'

/** How far the hashing may fall behind the download before the download waits for it. */
const MAX_BEHIND = 8 << 20

/**
 * SHA-256 computed on a worker thread while the main thread receives and writes the bytes: on a small
 * machine the download and the hash then use a core each instead of taking turns on one (measured on 2
 * cores with a 1 GiB file: see docs/benchmarks.md). Chunks are copied to the worker (64 KiB each, cheap next
 * to hashing them), and `update` says when the worker is more than 8 MiB behind, so that memory stays flat.
 */
export class ParallelHash {
  // A small young generation: the chunks it receives are garbage as soon as they are hashed.
  private readonly worker = new Worker(new URL('./hash-worker.js', import.meta.url), { resourceLimits: { maxYoungGenerationSizeMb: 4 } })
  private behind = 0
  private caughtUp: (() => void) | null = null
  private readonly digestPromise: Promise<string>
  private failure: Error | null = null

  constructor () {
    this.digestPromise = new Promise<string>((resolve, reject) => {
      this.worker.on('message', (message: { hashed?: number, digest?: string }) => {
        if (message.digest !== undefined) { resolve(message.digest); return }
        this.behind -= message.hashed!
        if (this.behind <= MAX_BEHIND / 2 && this.caughtUp) { const wake = this.caughtUp; this.caughtUp = null; wake() }
      })
      this.worker.once('error', (err) => { this.failure = err; reject(err); this.caughtUp?.() })
      // After the digest this changes nothing; before it, nobody waits forever for a thread that is gone.
      this.worker.once('exit', () => reject(new Error('the hashing thread ended')))
    })
    // A digest nobody asked for (a download that failed) must not become an unhandled rejection.
    this.digestPromise.catch(() => {})
  }

  /** Sends a chunk to be hashed. Returns false when the worker is far behind: await `drained()` then. */
  update (chunk: Uint8Array): boolean {
    if (this.failure) throw this.failure
    this.worker.postMessage(chunk)
    this.behind += chunk.byteLength
    return this.behind <= MAX_BEHIND
  }

  /** Resolves when the worker has caught up enough to take more. */
  drained (): Promise<void> {
    if (this.behind <= MAX_BEHIND || this.failure) return Promise.resolve()
    return new Promise((resolve) => { this.caughtUp = resolve })
  }

  /** The hex digest of everything sent; the worker ends after it. */
  digest (): Promise<string> {
    this.worker.postMessage(null)
    return this.digestPromise
  }

  /** Ends the worker without a digest (a download given up). */
  async discard (): Promise<void> {
    await this.worker.terminate()
  }
}
