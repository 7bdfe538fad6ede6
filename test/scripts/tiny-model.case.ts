import { spawn, type ChildProcess } from 'node:child_process'
import { createHash } from 'node:crypto'
import { readFile, stat } from 'node:fs/promises'
import { createServer } from 'node:net'
import { join } from 'node:path'
import { gguf, GGMLQuantizationType } from '@huggingface/gguf'
import t, { type Test } from 'tap'
import { main } from '../../scripts/make-tiny-model.js'
import { toFloat16Bits } from '../../scripts/tensor-data.js'
import { writeTinyGguf, writeTinySafetensors } from '../../scripts/tiny-model.js'
import { childEnv } from '../helpers/child-env.js'
import { cpuRuntime } from '../helpers/runtime.js'

const sha256 = async (file: string): Promise<string> => createHash('sha256').update(await readFile(file)).digest('hex')

async function freePort (): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise((resolve) => server.close(resolve))
  return port
}

/**
 * The test runtime's llama-server (test/helpers/runtime.ts: whatever build the tests run, not a folder name)
 * on `model`, on one thread, ready on /health; stopped (SIGTERM, then SIGKILL) when the test ends.
 */
async function serve (t: Test, model: string): Promise<string | null> {
  const { serverPath } = await cpuRuntime()
  const port = await freePort()
  const child: ChildProcess = spawn(serverPath, ['--host', '127.0.0.1', '--port', String(port), '-m', model, '-c', '512', '-np', '1', '--threads', '1', '--no-webui'], { env: childEnv(), stdio: ['ignore', 'pipe', 'pipe'] })
  let log = ''
  const keep = (data: Buffer | Error): void => { log = (log + String(data)).slice(-8000) }
  child.stdout!.on('data', keep)
  child.stderr!.on('data', keep)
  let gone = false // exited, killed by a signal, or never started (an 'error' with no 'exit')
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => { gone = true; resolve() })
    child.once('error', (err) => { keep(err); gone = true; resolve() })
  })
  t.teardown(async () => {
    if (gone) return
    child.kill('SIGTERM')
    const timer = setTimeout(() => child.kill('SIGKILL'), 3000)
    await exited
    clearTimeout(timer)
  })
  const url = `http://127.0.0.1:${port}`
  for (const deadline = Date.now() + 30_000; !gone && Date.now() < deadline;) {
    const status = await fetch(`${url}/health`).then((res) => res.status, () => 0)
    if (status === 200) return url
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  t.fail(`llama-server did not become ready on ${model}:\n${log}`)
  return null
}

const post = async (url: string, body: unknown): Promise<{ status: number, body: any }> => {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  return { status: res.status, body: await res.json() }
}

t.test('the default GGUF: under 1 MB, the same bytes for the same seed, the header llama.cpp expects', async (t) => {
  const dir = t.testdir()
  const a = await writeTinyGguf({ file: join(dir, 'a.gguf') })
  const b = await writeTinyGguf({ file: join(dir, 'b.gguf') })
  const c = await writeTinyGguf({ file: join(dir, 'c.gguf'), seed: 2 })
  t.ok(a.bytes < 1_000_000, `${a.bytes} bytes`)
  t.equal((await stat(a.file)).size, a.bytes, 'the size returned is the size written')
  t.equal(await sha256(a.file), await sha256(b.file), 'same seed, same SHA-256')
  t.not(await sha256(a.file), await sha256(c.file), 'another seed, other weights')

  const { metadata, tensorInfos, tensorDataOffset } = await gguf(a.file, { allowLocalFile: true })
  const meta = metadata as Record<string, unknown>
  t.equal(meta.version, 3, 'GGUF v3')
  t.equal(meta['general.architecture'], 'llama')
  t.equal(meta['tokenizer.ggml.model'], 'llama', 'a SentencePiece vocabulary')
  const tokens = meta['tokenizer.ggml.tokens'] as string[]
  t.equal(tokens.length, meta['llama.vocab_size'], 'llama.vocab_size counts the tokens')
  t.same(tokens.slice(0, 4), ['<unk>', '<s>', '</s>', '<0x00>'], 'special tokens, then byte tokens')
  t.equal(tokens[258], '<0xFF>')
  t.ok(tokens.includes('▁日本') && tokens.includes('é') && tokens.includes('🙂'), 'multi-byte pieces')
  t.same(tokens.slice(-2), ['<|im_start|>', '<|im_end|>'], 'chat tokens last')
  t.equal(meta['tokenizer.ggml.eos_token_id'], tokens.length - 1, 'EOS is <|im_end|>')
  t.match(meta['tokenizer.chat_template'], /<\|im_start\|>.*add_generation_prompt/, 'a ChatML template')

  t.equal(tensorInfos.length, 3 + 2 * 9, '3 tensors, and 9 per block')
  const info = (name: string): { shape: number[], dtype: number } => {
    const found = tensorInfos.find((i) => i.name === name)!
    return { shape: found.shape.map(Number), dtype: found.dtype }
  }
  t.same(info('token_embd.weight'), { shape: [64, tokens.length], dtype: GGMLQuantizationType.F16 }, 'ne[0] is the embedding')
  t.same(info('blk.1.ffn_down.weight'), { shape: [128, 64], dtype: GGMLQuantizationType.F16 }, 'ffn_down takes n_ff inputs')
  t.same(info('blk.0.attn_norm.weight'), { shape: [64], dtype: GGMLQuantizationType.F32 }, 'norms are f32')
  for (const i of tensorInfos) t.equal(Number(i.offset) % 32, 0, `${i.name} is aligned`)
  t.equal(Number(tensorDataOffset) % 32, 0, 'the data is aligned')
})

t.test('f16 is IEEE binary16, rounded to nearest even', async (t) => {
  const cases: Array<[number, number]> = [
    [1, 0x3c00], [-2, 0xc000], [1 / 3, 0x3555], [0.1, 0x2e66], [65504, 0x7bff], [65519, 0x7bff], [65520, 0x7c00],
    [2 ** -14, 0x0400], [2 ** -24, 0x0001], [2 ** -25, 0x0000], [1.5 * 2 ** -25, 0x0001], [3 * 2 ** -25, 0x0002],
    [-0, 0x8000], [-Infinity, 0xfc00], [Number.NaN, 0x7e00],
  ]
  for (const [value, bits] of cases) t.equal(toFloat16Bits(value), bits, `${value}`)
})

t.test('llama-server loads the f16 model and answers chat and completion', async (t) => {
  const { file } = await writeTinyGguf({ file: join(t.testdir(), 'tiny.gguf') })
  const url = await serve(t, file)
  if (!url) return
  const chat = await post(`${url}/v1/chat/completions`, { messages: [{ role: 'user', content: 'Say hello' }], max_tokens: 16 })
  t.equal(chat.status, 200, '/v1/chat/completions answers')
  t.equal(chat.body.choices?.[0]?.message?.role, 'assistant', 'with a message')
  t.type(chat.body.choices?.[0]?.message?.content, 'string')
  const completion = await post(`${url}/completion`, { prompt: 'hello world', n_predict: 16, ignore_eos: true })
  t.equal(completion.status, 200, '/completion answers')
  t.equal(completion.body.tokens_predicted, 16, 'the 16 tokens asked for')
  const text = 'café 日本 🙂'
  const { body: tokenized } = await post(`${url}/tokenize`, { content: text, with_pieces: true })
  t.ok(tokenized.tokens.some((p: { piece: string }) => p.piece === ' 日本'), 'a multi-byte piece is one token')
  const { body: detokenized } = await post(`${url}/detokenize`, { tokens: tokenized.tokens.map((p: { id: number }) => p.id) })
  t.equal(detokenized.content.trim(), text, 'UTF-8 survives the round trip')
})

t.test('llama-server loads an f32 model and a grouped-query one', async (t) => {
  const dir = t.testdir()
  for (const [label, options] of Object.entries({ f32: { dtype: 'f32' as const }, gqa: { nEmbd: 128, nHead: 8, nHeadKv: 2, nLayer: 3 } })) {
    const { file } = await writeTinyGguf({ file: join(dir, `${label}.gguf`), ...options })
    const url = await serve(t, file)
    if (!url) return
    const completion = await post(`${url}/completion`, { prompt: 'once', n_predict: 8, ignore_eos: true })
    t.equal(completion.body.tokens_predicted, 8, `the ${label} model answers`)
  }
})

/** The header of a .safetensors file and where its data starts. */
async function readSafetensors (file: string): Promise<{ header: Record<string, any>, data: Buffer }> {
  const bytes = await readFile(file)
  const length = Number(bytes.readBigUInt64LE(0))
  return { header: JSON.parse(bytes.subarray(8, 8 + length).toString('utf8')), data: bytes.subarray(8 + length) }
}

t.test('the Hugging Face checkpoint: config, safetensors and tokenizer agree with the GGUF', async (t) => {
  const dir = t.testdir()
  const options = { nEmbd: 64, nHead: 4, nHeadKv: 2, nLayer: 2, nFf: 96, seed: 5 }
  const { files } = await writeTinySafetensors({ dir: join(dir, 'hf'), ...options })
  t.same(files.map((f) => f.slice(join(dir, 'hf').length + 1)).sort(),
    ['config.json', 'generation_config.json', 'model.safetensors', 'tokenizer.model', 'tokenizer_config.json'])
  const config = JSON.parse(await readFile(join(dir, 'hf', 'config.json'), 'utf8'))
  t.match(config, { architectures: ['LlamaForCausalLM'], model_type: 'llama', hidden_size: 64, intermediate_size: 96, num_hidden_layers: 2, num_attention_heads: 4, num_key_value_heads: 2, torch_dtype: 'float16', tie_word_embeddings: false }, 'config.json')
  const tokenizerConfig = JSON.parse(await readFile(join(dir, 'hf', 'tokenizer_config.json'), 'utf8'))
  t.match(tokenizerConfig, { bos_token: '<s>', eos_token: '<|im_end|>', chat_template: /<\|im_start\|>/ }, 'tokenizer_config.json')

  const { header, data } = await readSafetensors(join(dir, 'hf', 'model.safetensors'))
  t.same(header.__metadata__, { format: 'pt' }, 'PyTorch-style metadata')
  const tensors = Object.entries(header).filter(([name]) => name !== '__metadata__').map(([name, v]) => ({ name, ...v }))
  t.equal(tensors.length, 3 + 2 * 9, 'the same tensors as the GGUF')
  let end = 0
  for (const tensor of [...tensors].sort((a, b) => a.data_offsets[0] - b.data_offsets[0])) {
    t.equal(tensor.data_offsets[0], end, `${tensor.name} follows the previous tensor`)
    t.equal(tensor.data_offsets[1] - tensor.data_offsets[0], tensor.shape.reduce((a: number, b: number) => a * b, 1) * 2, `${tensor.name}: f16 bytes`)
    end = tensor.data_offsets[1]
  }
  t.equal(end, data.length, 'the offsets cover the data exactly')
  const headDim = config.hidden_size / config.num_attention_heads
  const shape = (name: string): number[] => header[name].shape
  t.same(shape('model.embed_tokens.weight'), [config.vocab_size, config.hidden_size])
  t.same(shape('lm_head.weight'), [config.vocab_size, config.hidden_size])
  t.same(shape('model.norm.weight'), [config.hidden_size])
  t.same(shape('model.layers.1.self_attn.q_proj.weight'), [config.num_attention_heads * headDim, config.hidden_size])
  t.same(shape('model.layers.1.self_attn.k_proj.weight'), [config.num_key_value_heads * headDim, config.hidden_size])
  t.same(shape('model.layers.1.mlp.gate_proj.weight'), [config.intermediate_size, config.hidden_size])
  t.same(shape('model.layers.1.mlp.down_proj.weight'), [config.hidden_size, config.intermediate_size])

  // Same seed, same model: the GGUF's bytes, but for the query/key rows that convert_hf_to_gguf.py permutes.
  const { file } = await writeTinyGguf({ file: join(dir, 'same.gguf'), ...options })
  const { metadata, tensorInfos, tensorDataOffset } = await gguf(file, { allowLocalFile: true })
  const ggufBytes = await readFile(file)
  const ggufTensor = (name: string, size: number): Buffer => {
    const start = Number(tensorDataOffset + tensorInfos.find((i) => i.name === name)!.offset)
    return ggufBytes.subarray(start, start + size)
  }
  const hfTensor = (name: string): Buffer => data.subarray(header[name].data_offsets[0], header[name].data_offsets[1])
  const down = hfTensor('model.layers.0.mlp.down_proj.weight')
  t.ok(down.equals(ggufTensor('blk.0.ffn_down.weight', down.length)), 'ffn_down: the same bytes')
  const k = hfTensor('model.layers.1.self_attn.k_proj.weight')
  const ggufK = ggufTensor('blk.1.attn_k.weight', k.length)
  const rowBytes = config.hidden_size * 2
  let permuted = 0
  for (let row = 0; row < k.length / rowBytes; row++) {
    // convert_hf_to_gguf's permute: HF row (head, half, i) becomes GGUF row (head, i, half).
    const head = Math.floor(row / headDim)
    const half = Math.floor((row % headDim) / (headDim / 2))
    const i = row % (headDim / 2)
    const ggufRow = head * headDim + 2 * i + half
    if (k.subarray(row * rowBytes, (row + 1) * rowBytes).equals(ggufK.subarray(ggufRow * rowBytes, (ggufRow + 1) * rowBytes))) permuted++
  }
  t.equal(permuted, k.length / rowBytes, 'attn_k: the same rows, in RoPE-permuted order')

  const pieces = decodeSentencePieces(await readFile(join(dir, 'hf', 'tokenizer.model')))
  const meta = metadata as Record<string, unknown>
  t.same(pieces.map((p) => p.piece), meta['tokenizer.ggml.tokens'], 'tokenizer.model: the GGUF\'s tokens')
  t.same(pieces.map((p) => p.type), meta['tokenizer.ggml.token_type'], 'and token types')
  t.same(pieces.map((p) => p.score), meta['tokenizer.ggml.scores'], 'and scores')
})

/** The pieces (ModelProto field 1: piece 1, score 2, type 3) of a SentencePiece model; other fields skipped. */
function decodeSentencePieces (proto: Buffer): Array<{ piece: string, score: number, type: number }> {
  const fields = function * (buf: Buffer): Generator<[number, number | Buffer]> {
    let pos = 0
    const varint = (): number => {
      let value = 0n
      for (let shift = 0n; ; shift += 7n) {
        const byte = buf[pos++]!
        value |= BigInt(byte & 0x7f) << shift
        if (byte < 0x80) return Number(BigInt.asIntN(64, value))
      }
    }
    while (pos < buf.length) {
      const key = varint()
      const wire = key & 7
      if (wire === 0) yield [key >>> 3, varint()]
      else if (wire === 5) { yield [key >>> 3, buf.readFloatLE(pos)]; pos += 4 } else if (wire === 2) {
        const length = varint()
        yield [key >>> 3, buf.subarray(pos, pos + length)]
        pos += length
      } else throw new Error(`unexpected wire type ${wire}`)
    }
  }
  const pieces: Array<{ piece: string, score: number, type: number }> = []
  for (const [field, value] of fields(proto)) {
    if (field !== 1) continue
    const piece = { piece: '', score: 0, type: 1 }
    for (const [f, v] of fields(value as Buffer)) {
      if (f === 1) piece.piece = (v as Buffer).toString('utf8')
      if (f === 2) piece.score = v as number
      if (f === 3) piece.type = v as number
    }
    pieces.push(piece)
  }
  return pieces
}

t.test('the CLI writes both formats; bad options are refused', async (t) => {
  const dir = t.testdir()
  let printed = ''
  await main(['--out', join(dir, 'm.gguf'), '--safetensors', join(dir, 'hf'), '--layers', '1', '--embd', '32', '--heads', '2', '--seed', '9'], { write: (s: string) => { printed += s; return true } })
  t.match(printed, /wrote .*m\.gguf \(\d+ bytes\)\nwrote .*config\.json/, 'says what it wrote')
  const { metadata } = await gguf(join(dir, 'm.gguf'), { allowLocalFile: true })
  t.equal((metadata as Record<string, unknown>)['llama.block_count'], 1, '--layers')
  t.equal(JSON.parse(await readFile(join(dir, 'hf', 'config.json'), 'utf8')).hidden_size, 32, '--embd')
  await t.rejects(main([]), /usage/, 'no output named: the usage')
  await t.rejects(main(['--out', join(dir, 'x.gguf'), '--layers', 'two']), /--layers must be a whole number/, 'a word for a number')
  await t.rejects(writeTinyGguf({ file: join(dir, 'x.gguf'), nEmbd: 60, nHead: 4 }), RangeError, 'a head size of 15 cannot be rotated')
})
