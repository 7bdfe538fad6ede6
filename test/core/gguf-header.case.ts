import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { gguf } from '@huggingface/gguf'
import t from 'tap'
import { readGgufHeader } from '../../core/base/gguf-header.js'
import { writeGguf } from '../../core/testing/gguf-writer.js'
import { tempDir } from '../helpers/app.js'
import { runtimeSource } from '../helpers/realistic-models.js'

// The header reader against llama.cpp's own vocabulary files (read by @huggingface/gguf as the reference), files
// written by the tests' GGUF writer, and hand-made hostile headers that must fail with what is wrong.

const vocab = async (name: string): Promise<string> => join((await runtimeSource()).source, 'models', `ggml-vocab-${name}.gguf`)

t.test('a real vocabulary: every key and value as @huggingface/gguf reads it, and the arrays read past on request', async (t) => {
  for (const name of ['bert-bge', 'qwen2']) {
    const file = await vocab(name)
    const reference = await gguf(file, { allowLocalFile: true, computeParametersCount: true })
    const { version, tensor_count: _t, kv_count: _k, ...metadata } = reference.metadata as Record<string, unknown>
    const whole = await readGgufHeader(file)
    t.equal(whole.version, version, `${name}: the version`)
    t.same(whole.metadata, metadata, `${name}: the metadata, arrays and all`)
    t.equal(whole.parameterCount, reference.parameterCount, `${name}: the parameter count`)
    t.equal(whole.tensors.length, reference.tensorInfos.length)
    const short = await readGgufHeader(file, { maxArrayLength: 5 })
    t.same(short.metadata['tokenizer.ggml.tokens'], [], `${name}: a long array read past is []`)
    t.same(Object.keys(short.metadata), Object.keys(whole.metadata), `${name}: every key is still there`)
    t.equal(short.metadata['general.architecture'], whole.metadata['general.architecture'], `${name}: the values after the array are in step`)
  }
})

t.test('a model file: its tensors, their shapes and the parameter count', async (t) => {
  const dir = await tempDir(t)
  const file = join(dir, 'm.gguf')
  await writeGguf(file, {
    'general.architecture': { type: 'string', value: 'llama' },
    'llama.block_count': { type: 'u32', value: 2 },
    'llama.rope.freq_base': { type: 'f32', value: 0.5 },
    'general.flag': { type: 'bool', value: true },
    'tokenizer.ggml.tokens': { type: 'string[]', value: ['a', 'bé', '日本', ''] },
    'tokenizer.ggml.token_type': { type: 'i32[]', value: [1, -2, 3, 4] },
  }, [
    { name: 'token_embd.weight', shape: [4, 8], dtype: 'f32', fillRows: () => {} },
    { name: 'output_norm.weight', shape: [8], dtype: 'f16', fillRows: () => {} },
  ])
  const header = await readGgufHeader(file)
  t.same(header.metadata, {
    'general.architecture': 'llama',
    'llama.block_count': 2,
    'llama.rope.freq_base': 0.5,
    'general.flag': true,
    'tokenizer.ggml.tokens': ['a', 'bé', '日本', ''],
    'tokenizer.ggml.token_type': [1, -2, 3, 4],
  })
  t.same(header.tensors, [{ name: 'token_embd.weight', shape: [8n, 4n], dtype: 0 }, { name: 'output_norm.weight', shape: [8n], dtype: 1 }])
  t.equal(header.parameterCount, 40)
  t.same((await readGgufHeader(file, { maxArrayLength: 3 })).metadata['tokenizer.ggml.token_type'], [], 'a number array read past')
})

/** A hand-made header: magic, version, the counts, then `body`. */
function header (parts: { version?: number, tensors?: bigint, kvs?: bigint, body?: Buffer[] }): Buffer {
  const head = Buffer.alloc(24)
  head.write('GGUF', 0, 'latin1')
  head.writeUInt32LE(parts.version ?? 3, 4)
  head.writeBigUInt64LE(parts.tensors ?? 0n, 8)
  head.writeBigUInt64LE(parts.kvs ?? 1n, 16)
  return Buffer.concat([head, ...(parts.body ?? [])])
}
const u32 = (n: number): Buffer => { const b = Buffer.alloc(4); b.writeUInt32LE(n); return b }
const u64 = (n: bigint): Buffer => { const b = Buffer.alloc(8); b.writeBigUInt64LE(n); return b }
const str = (s: string): Buffer => Buffer.concat([u64(BigInt(Buffer.byteLength(s))), Buffer.from(s)])

t.test('hostile or broken headers fail with what is wrong, before allocating what they claim', async (t) => {
  const dir = await tempDir(t)
  const cases: Array<[string, Buffer, RegExp]> = [
    ['not a GGUF file', Buffer.from('PK\x03\x04 and then some more bytes of a zip'), /no GGUF magic number/],
    ['a file shorter than a header', Buffer.from('GGUF'), /shorter than its header/],
    ['GGUF version 1', header({ version: 1 }), /GGUF version 1 is not supported/],
    ['a billion metadata keys', header({ kvs: 1_000_000_000n }), /1000000000 metadata keys \(at most 100000\)/],
    ['a trillion tensors', header({ tensors: 10n ** 12n, kvs: 0n }), /tensors \(at most 10000000\)/],
    ['a key 2^40 bytes long', header({ body: [u64(2n ** 40n)] }), /a string of 1099511627776 bytes/],
    ['an unknown value type', header({ body: [str('k'), u32(13)] }), /unknown GGUF value type 13/],
    ['an array of 2^50 elements', header({ body: [str('k'), u32(9), u32(4), u64(2n ** 50n)] }), /an array of 1125899906842624 elements/],
    ['arrays nested five deep', header({ body: [str('k'), u32(9), ...Array.from({ length: 4 }, () => [u32(9), u64(1n)]).flat()] }), /arrays nested 5 deep/],
    ['a file that ends inside a string', header({ body: [str('general.name'), u32(8), u64(100n), Buffer.from('short')] }), /the file ends inside its GGUF header/],
    ['a tensor of 9 dimensions', header({ tensors: 1n, kvs: 0n, body: [str('w'), u32(9)] }), /tensor "w" has 9 dimensions/],
    ['a dimension of 2^40', header({ tensors: 1n, kvs: 0n, body: [str('w'), u32(1), u64(2n ** 40n), u32(0), u64(0n)] }), /tensor "w" has a dimension of 1099511627776/],
  ]
  for (const [name, bytes, message] of cases) {
    const file = join(dir, `${name.replace(/\W+/g, '-')}.gguf`)
    await writeFile(file, bytes)
    await t.rejects(readGgufHeader(file), message, name)
  }
  const cut = join(dir, 'cut-in-a-skipped-array.gguf')
  await writeFile(cut, header({ body: [str('scores'), u32(9), u32(6), u64(1000n), Buffer.alloc(40)] }))
  await t.rejects(readGgufHeader(cut, { maxArrayLength: 0 }), /the file ends inside its GGUF header/, 'a file cut inside an array it reads past')
  await t.rejects(readGgufHeader(join(dir, 'missing.gguf')), { code: 'ENOENT' }, 'a missing file: the file system\'s error')
})

t.test('a big-endian file is read as such', async (t) => {
  const dir = await tempDir(t)
  const file = join(dir, 'be.gguf')
  const be32 = (n: number): Buffer => { const b = Buffer.alloc(4); b.writeUInt32BE(n); return b }
  const be64 = (n: bigint): Buffer => { const b = Buffer.alloc(8); b.writeBigUInt64BE(n); return b }
  await writeFile(file, Buffer.concat([Buffer.from('GGUF'), be32(3), be64(0n), be64(1n), be64(4n), Buffer.from('name'), be32(4), be32(7)]))
  t.same((await readGgufHeader(file)).metadata, { name: 7 })
})
