import { createHash } from 'node:crypto'
import { ParallelHash } from './parallel-hash.js'

/** SHA-256 of a download as its bytes go by: ParallelHash's interface, whichever thread does the hashing. */
export interface StreamHash {
  /** Takes a chunk; false asks the caller to await `drained()` before the next. */
  update (chunk: Uint8Array): boolean
  drained (): Promise<void>
  digest (): Promise<string>
  discard (): Promise<void>
}

/**
 * Below this size a thread of its own costs more than it saves: starting a worker takes tens of milliseconds of
 * CPU, about what hashing 32 MiB on the main thread does (a model's config, tokenizer, projector, small GGUF).
 */
export const PARALLEL_HASH_MIN_BYTES = 32 << 20

/** Hashes on the calling thread: never behind. */
class InlineHash implements StreamHash {
  private readonly hash = createHash('sha256')

  update (chunk: Uint8Array): boolean {
    this.hash.update(chunk)
    return true
  }

  async drained (): Promise<void> {}

  async digest (): Promise<string> {
    return this.hash.digest('hex')
  }

  async discard (): Promise<void> {}
}

/** The hash for a file of `size` bytes: on a worker thread where the file is large enough to pay for one. */
export function hashFor (size: number): StreamHash {
  return size >= PARALLEL_HASH_MIN_BYTES ? new ParallelHash() : new InlineHash()
}
