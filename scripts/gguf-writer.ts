import { open, type FileHandle } from 'node:fs/promises'

// GGUF v3, as ggml/docs/gguf.md describes it: header, key/value metadata, tensor infos, then tensor data
// aligned to `general.alignment` (32 by default).

const ALIGNMENT = 32

export const GgmlType = { F32: 0, F16: 1 } as const
export type GgmlTypeId = (typeof GgmlType)[keyof typeof GgmlType]

const ValueType = { UINT32: 4, INT32: 5, FLOAT32: 6, BOOL: 7, STRING: 8, ARRAY: 9 } as const

/** A metadata value with its GGUF type spelled out, since a JS number could be any of several. */
export type GgufValue =
  | { type: 'u32', value: number } | { type: 'i32', value: number } | { type: 'f32', value: number }
  | { type: 'bool', value: boolean } | { type: 'string', value: string }
  | { type: 'string[]', value: string[] } | { type: 'f32[]', value: number[] } | { type: 'i32[]', value: number[] }

export interface TensorSpec {
  name: string
  /** GGUF order: dims[0] varies fastest. */
  dims: number[]
  type: GgmlTypeId
  /** Fills the tensor's values (as float32, converted on write) in storage order. */
  fill: (out: Float32Array) => void
}

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
  pad (): void { const n = (ALIGNMENT - (this.length % ALIGNMENT)) % ALIGNMENT; this.ensure(n); this.buf.fill(0, this.length, this.length + n); this.length += n }
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

function elementCount (dims: number[]): number { return dims.reduce((a, b) => a * b, 1) }
function byteSize (t: TensorSpec): number { return elementCount(t.dims) * (t.type === GgmlType.F16 ? 2 : 4) }
function aligned (n: number): number { return Math.ceil(n / ALIGNMENT) * ALIGNMENT }

/** IEEE 754 half precision from single, rounding to nearest even. */
export function toFloat16Bits (value: number): number {
  F32[0] = value
  const x = U32[0]!
  const sign = (x >>> 16) & 0x8000
  const exp = (x >>> 23) & 0xff
  let mant = x & 0x7fffff
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0)
  const e = exp - 127 + 15
  if (e >= 0x1f) return sign | 0x7c00
  if (e <= 0) {
    if (e < -10) return sign
    mant |= 0x800000
    const shift = 14 - e
    let half = mant >>> shift
    const rest = mant & ((1 << shift) - 1)
    const midpoint = 1 << (shift - 1)
    if (rest > midpoint || (rest === midpoint && (half & 1))) half++
    return sign | half
  }
  let half = sign | (e << 10) | (mant >>> 13)
  const rest = mant & 0x1fff
  if (rest > 0x1000 || (rest === 0x1000 && (half & 1))) half++
  return half
}
const F32 = new Float32Array(1)
const U32 = new Uint32Array(F32.buffer)

/**
 * Writes a GGUF file. Tensor data is produced and written one tensor at a time, so a model of hundreds of
 * megabytes never sits in memory whole. Returns the number of bytes written.
 */
export async function writeGguf (file: string, metadata: Record<string, GgufValue>, tensors: TensorSpec[]): Promise<number> {
  const header = new Bytes()
  header.u32(0x46554747) // "GGUF"
  header.u32(3)
  header.u64(tensors.length)
  header.u64(Object.keys(metadata).length)
  for (const [key, value] of Object.entries(metadata)) { header.str(key); writeValue(header, value) }
  let offset = 0
  for (const t of tensors) {
    header.str(t.name)
    header.u32(t.dims.length)
    for (const d of t.dims) header.u64(d)
    header.u32(t.type)
    header.u64(offset)
    offset += aligned(byteSize(t))
  }
  header.pad()
  let handle: FileHandle | undefined
  try {
    handle = await open(file, 'w')
    await handle.write(header.view())
    let written = header.length
    for (const t of tensors) {
      const values = new Float32Array(elementCount(t.dims))
      t.fill(values)
      const data = Buffer.alloc(aligned(byteSize(t)))
      if (t.type === GgmlType.F16) for (let i = 0; i < values.length; i++) data.writeUInt16LE(toFloat16Bits(values[i]!), i * 2)
      else Buffer.from(values.buffer, values.byteOffset, values.byteLength).copy(data)
      await handle.write(data)
      written += data.length
    }
    return written
  } finally {
    await handle?.close()
  }
}
