import { open, type FileHandle } from 'node:fs/promises'

/**
 * A GGUF file's header (its metadata and tensor table), read without decoding what the caller does not want.
 * @huggingface/gguf decodes every string of every array with a new TextDecoder: a Qwen vocabulary's 151,936
 * tokens took over 3 s of the event loop on each /api/show or registration. Here an array longer than
 * `maxArrayLength` is stepped over (its strings' lengths read, not their bytes) and given as [].
 * The limits are @huggingface/gguf's, so that a hostile file cannot make the reader allocate without bound.
 */

export type GgufValue = number | bigint | boolean | string | GgufValue[]

export interface GgufTensorInfo {
  name: string
  shape: bigint[]
  /** ggml's type number of the tensor's data (0 F32, 1 F16, …). */
  dtype: number
}

export interface GgufHeader {
  version: number
  metadata: Record<string, GgufValue>
  tensors: GgufTensorInfo[]
  /** The sum of the tensors' element counts. */
  parameterCount: number
}

export interface GgufReadOptions {
  /** Arrays with more elements than this are read past and given as []; unlimited when left out. */
  maxArrayLength?: number
}

const MAX_KV_COUNT = 1e5
const MAX_TENSOR_COUNT = 1e7
const MAX_STRING_LENGTH = 1e7
const MAX_STRING_BIG = BigInt(MAX_STRING_LENGTH)
const MAX_ARRAY_LENGTH = 1e6
const MAX_ARRAY_DEPTH = 4
const MAX_TENSOR_NDIMS = 8
const MAX_TENSOR_DIM = 2n ** 32n
const CHUNK = 1 << 20

// GGUF value types: the size of the fixed-size ones, by type number.
const STRING = 8
const ARRAY = 9
const FIXED_SIZE: Record<number, number> = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 }

/** Reads a file front to back through a growing window, so that a header of any size costs reads of 1 MiB. */
class Reader {
  private buf = Buffer.alloc(0)
  /** File offset of buf[0]. */
  private base = 0
  /** File offset of the next byte to read. */
  pos = 0
  private ended = false

  constructor (private readonly file: FileHandle, public littleEndian = true) {}

  /** True when `n` more bytes are not in the window yet (then `fill(n)` must be awaited). */
  short (n: number): boolean {
    return this.pos + n > this.base + this.buf.length
  }

  async fill (n: number): Promise<void> {
    while (this.short(n)) {
      if (this.ended) throw new Error('the file ends inside its GGUF header')
      // What is left of the window from pos on (nothing when a skip went past it), then the file from there.
      // Read straight in behind it: one copy of the window, not two.
      const keep = this.buf.subarray(Math.min(this.pos - this.base, this.buf.length))
      const want = Math.max(CHUNK, n)
      const next = Buffer.allocUnsafe(keep.length + want)
      keep.copy(next)
      const { bytesRead } = await this.file.read(next, keep.length, want, this.pos + keep.length)
      if (bytesRead < want) this.ended = true
      this.base = this.pos
      this.buf = next.subarray(0, keep.length + bytesRead)
    }
  }

  private at (n: number): number {
    const i = this.pos - this.base
    this.pos += n
    return i
  }

  u32 (): number { const i = this.at(4); return this.littleEndian ? this.buf.readUInt32LE(i) : this.buf.readUInt32BE(i) }
  u64 (): bigint { const i = this.at(8); return this.littleEndian ? this.buf.readBigUInt64LE(i) : this.buf.readBigUInt64BE(i) }
  /** Moves past `n` bytes, which need not be in the window: the next fill reads from the new place. */
  skip (n: number): void { this.pos += n }

  fixed (type: number): number | bigint | boolean {
    const le = this.littleEndian
    const b = this.buf
    const i = this.at(FIXED_SIZE[type]!)
    switch (type) {
      case 0: return b.readUInt8(i)
      case 1: return b.readInt8(i)
      case 2: return le ? b.readUInt16LE(i) : b.readUInt16BE(i)
      case 3: return le ? b.readInt16LE(i) : b.readInt16BE(i)
      case 4: return le ? b.readUInt32LE(i) : b.readUInt32BE(i)
      case 5: return le ? b.readInt32LE(i) : b.readInt32BE(i)
      case 6: return le ? b.readFloatLE(i) : b.readFloatBE(i)
      case 7: return b.readUInt8(i) !== 0
      case 10: return le ? b.readBigUInt64LE(i) : b.readBigUInt64BE(i)
      case 11: return le ? b.readBigInt64LE(i) : b.readBigInt64BE(i)
      default: return le ? b.readDoubleLE(i) : b.readDoubleBE(i)
    }
  }

  /** A string's length, checked; the window then holds its bytes. */
  async stringLength (): Promise<number> {
    if (this.short(8)) await this.fill(8)
    const length = this.u64()
    if (length > MAX_STRING_BIG) throw new Error(`a string of ${length} bytes (at most ${MAX_STRING_LENGTH})`)
    const n = Number(length)
    if (this.short(n)) await this.fill(n)
    return n
  }

  async string (): Promise<string> {
    const n = await this.stringLength()
    const i = this.at(n)
    return this.buf.toString('utf8', i, i + n)
  }

  /** The next string when the window holds all of it, else undefined (nothing consumed). */
  stringNow (decode: boolean): string | undefined {
    if (this.short(8)) return undefined
    const i = this.pos - this.base
    // Two 32-bit halves: no BigInt for each of a vocabulary's strings.
    const n = this.littleEndian ? this.buf.readUInt32LE(i) : this.buf.readUInt32BE(i + 4)
    const high = this.littleEndian ? this.buf.readUInt32LE(i + 4) : this.buf.readUInt32BE(i)
    if (high !== 0 || n > MAX_STRING_LENGTH) return undefined // stringLength() says what is wrong
    if (this.short(8 + n)) return undefined
    this.pos += 8 + n
    return decode ? this.buf.toString('utf8', i + 8, i + 8 + n) : ''
  }
}

/** Reads the header of the GGUF file at `path`; rejects with what is wrong when it is not a readable GGUF file. */
export async function readGgufHeader (path: string, options: GgufReadOptions = {}): Promise<GgufHeader> {
  const file = await open(path, 'r')
  try {
    return await readHeader(file, options.maxArrayLength ?? Infinity)
  } finally {
    await file.close()
  }
}

async function readHeader (file: FileHandle, maxArrayLength: number): Promise<GgufHeader> {
  const r = new Reader(file)
  await r.fill(24).catch(() => { throw new Error('not a GGUF file: shorter than its header') })
  if (r.u32() !== 0x46554747) throw new Error('not a GGUF file: no GGUF magic number at its start')
  // The version is small: read little-endian, a big-endian file's shows in the high bytes.
  r.littleEndian = (r.u32() & 0xffff) !== 0
  r.skip(-4)
  const version = r.u32()
  if (version !== 2 && version !== 3) throw new Error(`GGUF version ${version} is not supported (2 and 3 are)`)
  const tensorCount = r.u64()
  const kvCount = r.u64()
  if (tensorCount > BigInt(MAX_TENSOR_COUNT)) throw new Error(`${tensorCount} tensors (at most ${MAX_TENSOR_COUNT})`)
  if (kvCount > BigInt(MAX_KV_COUNT)) throw new Error(`${kvCount} metadata keys (at most ${MAX_KV_COUNT})`)

  const metadata: Record<string, GgufValue> = {}
  for (let k = 0; k < Number(kvCount); k++) {
    const key = await r.string()
    if (r.short(4)) await r.fill(4)
    metadata[key] = await readValue(r, r.u32(), maxArrayLength, 0)
  }

  const tensors: GgufTensorInfo[] = []
  let parameterCount = 0
  for (let t = 0; t < Number(tensorCount); t++) {
    const name = await r.string()
    if (r.short(4)) await r.fill(4)
    const dims = r.u32()
    if (dims > MAX_TENSOR_NDIMS) throw new Error(`tensor "${name}" has ${dims} dimensions (at most ${MAX_TENSOR_NDIMS})`)
    if (r.short(dims * 8 + 12)) await r.fill(dims * 8 + 12)
    const shape: bigint[] = []
    for (let d = 0; d < dims; d++) {
      const size = r.u64()
      if (size > MAX_TENSOR_DIM) throw new Error(`tensor "${name}" has a dimension of ${size} (at most ${MAX_TENSOR_DIM})`)
      shape.push(size)
    }
    const dtype = r.u32()
    r.skip(8) // the data's offset
    tensors.push({ name, shape, dtype })
    parameterCount += shape.reduce((n, size) => n * Number(size), 1)
  }
  // A skipped array is not read: a file cut inside one shows only here.
  if (r.pos > (await file.stat()).size) throw new Error('the file ends inside its GGUF header')
  return { version, metadata, tensors, parameterCount }
}

async function readValue (r: Reader, type: number, maxArrayLength: number, depth: number): Promise<GgufValue> {
  if (type === STRING) return r.string()
  if (type === ARRAY) return readArray(r, maxArrayLength, depth)
  const size = FIXED_SIZE[type]
  if (size === undefined) throw new Error(`unknown GGUF value type ${type}`)
  if (r.short(size)) await r.fill(size)
  return r.fixed(type)
}

async function readArray (r: Reader, maxArrayLength: number, depth: number): Promise<GgufValue[]> {
  if (depth >= MAX_ARRAY_DEPTH) throw new Error(`arrays nested ${depth + 1} deep (at most ${MAX_ARRAY_DEPTH})`)
  if (r.short(12)) await r.fill(12)
  const type = r.u32()
  const length = r.u64()
  if (length > BigInt(MAX_ARRAY_LENGTH)) throw new Error(`an array of ${length} elements (at most ${MAX_ARRAY_LENGTH})`)
  const n = Number(length)
  const size = FIXED_SIZE[type]
  if (n > maxArrayLength) {
    if (size !== undefined) {
      r.skip(n * size)
    } else if (type === STRING) {
      for (let i = 0; i < n; i++) {
        if (r.stringNow(false) !== undefined) continue
        if (r.short(8)) await r.fill(8)
        const length = r.u64()
        if (length > MAX_STRING_BIG) throw new Error(`a string of ${length} bytes (at most ${MAX_STRING_LENGTH})`)
        r.skip(Number(length))
      }
    } else {
      for (let i = 0; i < n; i++) await readValue(r, type, maxArrayLength, depth + 1)
    }
    return []
  }
  const values: GgufValue[] = []
  if (size !== undefined) {
    if (r.short(n * size)) await r.fill(n * size)
    for (let i = 0; i < n; i++) values.push(r.fixed(type))
  } else if (type === STRING) {
    for (let i = 0; i < n; i++) values.push(r.stringNow(true) ?? await r.string())
  } else {
    for (let i = 0; i < n; i++) values.push(await readValue(r, type, maxArrayLength, depth + 1))
  }
  return values
}
