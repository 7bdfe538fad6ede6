/**
 * Memory for one socket's reads, handed out from a large block front to back, for Node's `onread` option
 * (a buffer generator and a callback instead of 'data' events).
 *
 * Why: without `onread`, every read costs Node a fresh 64 KiB allocation, shrunk to the bytes read and
 * wrapped in an ArrayBuffer, then a trip through the Readable stream machinery; on the streamed hot path that
 * is once per token. Here a read lands in the free part of the current block, and its bytes stay valid for
 * as long as anything refers to them (a write to the client still queued, a chunk cut in two waiting for its
 * rest): a block is never written twice, only left for a new one when little of it is free, and collected
 * once nothing points into it.
 *
 * One slab per socket: each socket holds the space for its next read until that read comes, so two sockets
 * drawing from one block would be handed the same bytes.
 */
export class ReadSlab {
  private block: Buffer
  private used = 0

  /**
   * @param blockBytes the size of each block (a streamed answer of a few hundred tokens fits in one)
   * @param minReadBytes the least free space a read is offered; a larger read is simply split in two
   */
  constructor (private readonly blockBytes = 64 << 10, private readonly minReadBytes = 4 << 10) {
    this.block = Buffer.allocUnsafe(blockBytes)
  }

  /** The free space the next read goes into (`onread.buffer`). */
  next (): Buffer {
    if (this.block.length - this.used < this.minReadBytes) {
      this.block = Buffer.allocUnsafe(this.blockBytes)
      this.used = 0
    }
    return this.block.subarray(this.used)
  }

  /** Takes the `n` bytes a read put at the start of `space` (the last `next()`), and returns them. */
  take (space: Buffer, n: number): Buffer {
    this.used += n
    return space.subarray(0, n)
  }
}
