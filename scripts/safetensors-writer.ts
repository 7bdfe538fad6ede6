import { open } from 'node:fs/promises'
import { byteLength, encodeTensor, type Tensor } from './tensor-data.js'

// safetensors, as huggingface/safetensors documents it: an 8-byte little-endian header length, a JSON header
// mapping each tensor name to its dtype, shape and [begin, end) byte offsets into the data that follows, then
// the data, tensors back to back in header order.

const DTYPE = { f32: 'F32', f16: 'F16' } as const

/** Writes a .safetensors file and returns its size in bytes; tensor data is written a chunk at a time. */
export async function writeSafetensors (file: string, tensors: Tensor[], metadata: Record<string, string> = {}): Promise<number> {
  const header: Record<string, unknown> = { __metadata__: metadata }
  let offset = 0
  for (const t of tensors) {
    header[t.name] = { dtype: DTYPE[t.dtype], shape: t.shape, data_offsets: [offset, offset + byteLength(t)] }
    offset += byteLength(t)
  }
  let json = JSON.stringify(header)
  // Padded with spaces to 8 bytes, as the reference writer does, so the data starts aligned.
  json += ' '.repeat((8 - (Buffer.byteLength(json) % 8)) % 8)
  const head = Buffer.alloc(8 + Buffer.byteLength(json))
  head.writeBigUInt64LE(BigInt(head.length - 8))
  head.write(json, 8, 'utf8')
  const handle = await open(file, 'w')
  try {
    await handle.write(head)
    for (const t of tensors) for (const chunk of encodeTensor(t)) await handle.write(chunk)
    return head.length + offset
  } finally {
    await handle.close()
  }
}
