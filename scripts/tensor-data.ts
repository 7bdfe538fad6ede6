import { endianness } from 'node:os'

// Tensor values produced row by row and encoded in chunks, so that writing a model of hundreds of megabytes
// holds about a megabyte of it in memory at a time. Shared by the GGUF and the safetensors writers.

export type Dtype = 'f32' | 'f16'

const BYTES_PER_ELEMENT: Record<Dtype, number> = { f32: 4, f16: 2 }
const CHUNK_BYTES = 1 << 20

// The typed-array views below write host byte order; both formats are little-endian.
if (endianness() !== 'LE') throw new Error('the tiny-model writers need a little-endian host')

export interface Tensor {
  name: string
  /** Row-major shape, outermost first: safetensors' order (GGUF lists the dimensions reversed). */
  shape: number[]
  dtype: Dtype
  /** Writes the values of consecutive rows (of `shape.at(-1)` values each), from row `first`, into `out`. */
  fillRows: (first: number, out: Float32Array) => void
}

export function rowLength (t: Tensor): number { return t.shape.at(-1) ?? 1 }
export function elementCount (t: Tensor): number { return t.shape.reduce((a, b) => a * b, 1) }
export function byteLength (t: Tensor): number { return elementCount(t) * BYTES_PER_ELEMENT[t.dtype] }

/**
 * The tensor's bytes, a whole number of rows per chunk. Chunks share one buffer: write each before
 * asking for the next.
 */
export function * encodeTensor (t: Tensor): Generator<Buffer> {
  const width = rowLength(t)
  const rows = elementCount(t) / width
  const rowsPerChunk = Math.max(1, Math.floor(CHUNK_BYTES / (width * BYTES_PER_ELEMENT[t.dtype])))
  const values = new Float32Array(Math.min(rows, rowsPerChunk) * width)
  const bits = new Uint32Array(values.buffer)
  const half = t.dtype === 'f16' ? new Uint16Array(values.length) : null
  for (let first = 0; first < rows; first += rowsPerChunk) {
    const n = Math.min(rowsPerChunk, rows - first) * width
    const chunk = values.subarray(0, n)
    t.fillRows(first, chunk)
    if (!half) { yield Buffer.from(chunk.buffer, 0, n * 4); continue }
    for (let i = 0; i < n; i++) half[i] = f32BitsToF16Bits(bits[i]!)
    yield Buffer.from(half.buffer, 0, n * 2)
  }
}

/** IEEE 754 binary16 bits of a number (rounded to float32 first), rounding to nearest, ties to even. */
export function toFloat16Bits (value: number): number {
  SCRATCH_F32[0] = value
  return f32BitsToF16Bits(SCRATCH_U32[0]!)
}
const SCRATCH_F32 = new Float32Array(1)
const SCRATCH_U32 = new Uint32Array(SCRATCH_F32.buffer)

function f32BitsToF16Bits (x: number): number {
  const sign = (x >>> 16) & 0x8000
  const abs = x & 0x7fffffff
  if (abs < 0x38800000) return sign | subnormalHalf(abs) // below 2^-14, the smallest normal half
  if (abs >= 0x47800000) return sign | (abs > 0x7f800000 ? 0x7e00 : 0x7c00) // 2^16 and up: infinity; NaN stays NaN
  // Rebias the exponent (127 to 15) and round away the 13 low mantissa bits to nearest even without a branch
  // (random weights round either way at random, which a branch would mispredict): add just under half, plus
  // one if the kept part is odd. A carry into the exponent is right, up to infinity from 65520.
  return sign | ((abs - 0x38000000 + 0xfff + ((abs >>> 13) & 1)) >>> 13)
}

function subnormalHalf (abs: number): number {
  if (abs < 0x33000000) return 0 // under 2^-25, half the smallest subnormal: rounds to zero
  const mant = (abs & 0x7fffff) | 0x800000
  const shift = 126 - (abs >>> 23)
  const half = mant >>> shift
  const rest = mant & ((1 << shift) - 1)
  const midpoint = 1 << (shift - 1)
  return rest > midpoint || (rest === midpoint && (half & 1)) ? half + 1 : half
}
