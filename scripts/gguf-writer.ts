import { open } from 'node:fs/promises'
import { byteLength, encodeTensor, type Tensor } from './tensor-data.js'

// GGUF v3, as ggml/docs/gguf.md describes it: header, key/value metadata, tensor infos, then tensor data
// aligned to `general.alignment` (32 by default).

const ALIGNMENT = 32

const GgmlType = { f32: 0, f16: 1 } as const

const ValueType = { UINT32: 4, INT32: 5, FLOAT32: 6, BOOL: 7, STRING: 8, ARRAY: 9 } as const

/** A metadata value with its GGUF type spelled out, since a JS number could be any of several. */
export type GgufValue =
  | { type: 'u32', value: number } | { type: 'i32', value: number } | { type: 'f32', value: number }
  | { type: 'bool', value: boolean } | { type: 'string', value: string }
  | { type: 'string[]', value: string[] } | { type: 'f32[]', value: number[] } | { type: 'i32[]', value: number[] }

/** Growable byte buffer for the header part, which is small. */
class Bytes {
  private buf = Buffer.alloc(1 << 16)
  length = 0
  private ensure (n: number): void {
    if (this.length + n <= this.buf.length) return
    const next = Buffer.alloc(Math.max(this.buf.length * 2, this.length + n))
    this.buf.copy(next, 0, 0, this.length)
    this.buf = next
  }
  u32 (v: number): void { this.ensure(4); this.buf.writeUInt32LE(v, this.length); this.length += 4 }
  i32 (v: number): void { this.ensure(4); this.buf.writeInt32LE(v, this.length); this.length += 4 }
  u64 (v: number): void { this.ensure(8); this.buf.writeBigUInt64LE(BigInt(v), this.length); this.length += 8 }
  f32 (v: number): void { this.ensure(4); this.buf.writeFloatLE(v, this.length); this.length += 4 }
  u8 (v: number): void { this.ensure(1); this.buf.writeUInt8(v, this.length); this.length += 1 }
  str (s: string): void { const b = Buffer.from(s, 'utf8'); this.u64(b.length); this.ensure(b.length); b.copy(this.buf, this.length); this.length += b.length }
  pad (): void { const n = padding(this.length); this.ensure(n); this.buf.fill(0, this.length, this.length + n); this.length += n }
  view (): Buffer { return this.buf.subarray(0, this.length) }
}

function writeValue (out: Bytes, value: GgufValue): void {
  switch (value.type) {
    case 'u32': out.u32(ValueType.UINT32); out.u32(value.value); break
    case 'i32': out.u32(ValueType.INT32); out.i32(value.value); break
    case 'f32': out.u32(ValueType.FLOAT32); out.f32(value.value); break
    case 'bool': out.u32(ValueType.BOOL); out.u8(value.value ? 1 : 0); break
    case 'string': out.u32(ValueType.STRING); out.str(value.value); break
    case 'string[]': out.u32(ValueType.ARRAY); out.u32(ValueType.STRING); out.u64(value.value.length); for (const s of value.value) out.str(s); break
    case 'f32[]': out.u32(ValueType.ARRAY); out.u32(ValueType.FLOAT32); out.u64(value.value.length); for (const f of value.value) out.f32(f); break
    case 'i32[]': out.u32(ValueType.ARRAY); out.u32(ValueType.INT32); out.u64(value.value.length); for (const i of value.value) out.i32(i); break
  }
}

function padding (n: number): number { return (ALIGNMENT - (n % ALIGNMENT)) % ALIGNMENT }

/**
 * Writes a GGUF file and returns its size in bytes. Tensor data is produced and written a chunk at a time, so
 * a model of hundreds of megabytes never sits in memory whole.
 */
export async function writeGguf (file: string, metadata: Record<string, GgufValue>, tensors: Tensor[]): Promise<number> {
  const header = new Bytes()
  header.u32(0x46554747) // "GGUF"
  header.u32(3)
  header.u64(tensors.length)
  header.u64(Object.keys(metadata).length)
  for (const [key, value] of Object.entries(metadata)) { header.str(key); writeValue(header, value) }
  let offset = 0
  for (const t of tensors) {
    header.str(t.name)
    header.u32(t.shape.length)
    for (const d of [...t.shape].reverse()) header.u64(d) // ne[0], the fastest-varying dimension, first
    header.u32(GgmlType[t.dtype])
    header.u64(offset)
    offset += byteLength(t) + padding(byteLength(t))
  }
  header.pad()
  const handle = await open(file, 'w')
  try {
    await handle.write(header.view())
    const zeros = Buffer.alloc(ALIGNMENT)
    for (const t of tensors) {
      for (const chunk of encodeTensor(t)) await handle.write(chunk)
      await handle.write(zeros, 0, padding(byteLength(t)))
    }
    return header.length + offset
  } finally {
    await handle.close()
  }
}
