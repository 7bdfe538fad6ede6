import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { gguf } from '@huggingface/gguf'
import t, { type Test } from 'tap'
import { LlamaServer } from '../../runtimes/process/llama-server.js'
import { writeTinyBert, type TinyBert } from '../../scripts/realistic-bert.js'
import { tempDir } from '../helpers/app.js'
import { cpuRuntime } from '../helpers/runtime.js'

// The tiny BERT fixtures (scripts/realistic-bert.ts) under the real llama-server: what it answers on its
// embedding, rerank and tokenize endpoints, recorded here as the gateway will see it.

const N_EMBD = 64
const CTX = 512

/** The llama.cpp tree the test runtime was built from (its build-info.json says which). */
async function llamaCppSrc (): Promise<string> {
  const runtime = await cpuRuntime()
  const info = JSON.parse(await readFile(join(runtime.binDir, '..', 'build-info.json'), 'utf8')) as { source?: string }
  if (!info.source) throw new Error(`the runtime at ${runtime.binDir} does not say which llama.cpp tree it was built from`)
  return info.source
}

async function serve (t: Test, kind: 'embedding' | 'reranker', options: { ctxSize?: number, parallel?: number, pooling?: 'cls' | 'mean' } = {}): Promise<{ server: LlamaServer, model: TinyBert }> {
  const model = await writeTinyBert({ file: join(await tempDir(t), `bert-${kind}.gguf`), llamaCppSrc: await llamaCppSrc(), kind, nEmbd: N_EMBD, ...(options.pooling ? { pooling: options.pooling } : {}) })
  const server = new LlamaServer({
    build: await cpuRuntime(), modelPath: model.file, alias: `tiny/bert-${kind}`, ctxSize: options.ctxSize ?? CTX,
    parallel: options.parallel ?? 1, threads: 1, extraArgs: [kind === 'embedding' ? '--embeddings' : '--reranking'],
  })
  t.teardown(() => server.stop())
  await server.start()
  return { server, model }
}

/** A raw POST, so that error answers keep their status and body. */
async function post (server: LlamaServer, path: string, body: unknown): Promise<{ status: number, body: any }> {
  const res = await fetch(`${server.endpoint.address.baseUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  const text = await res.text()
  let parsed: unknown = text
  try { parsed = JSON.parse(text) } catch { /* not JSON: keep the text */ }
  return { status: res.status, body: parsed }
}

const norm = (v: number[]): number => Math.sqrt(v.reduce((s, x) => s + x * x, 0))
const finite = (v: number[]): boolean => v.every((x) => typeof x === 'number' && Number.isFinite(x))
const signal = (): AbortSignal => AbortSignal.timeout(60_000)

t.test('the fixtures: real bge vocabulary, bert architecture, the reranker a few tensors larger', async (t) => {
  const dir = await tempDir(t)
  const src = await llamaCppSrc()
  const embedding = await writeTinyBert({ file: join(dir, 'e.gguf'), llamaCppSrc: src, kind: 'embedding' })
  const reranker = await writeTinyBert({ file: join(dir, 'r.gguf'), llamaCppSrc: src, kind: 'reranker' })
  t.equal(embedding.vocabSize, 30522)
  t.equal(embedding.nEmbd, 64)
  t.equal(embedding.clsId, 101)
  t.equal(embedding.sepId, 102)
  t.ok(reranker.bytes > embedding.bytes)
  const meta = async (file: string): Promise<Record<string, unknown>> => (await gguf(file, { allowLocalFile: true }) as unknown as { metadata: Record<string, unknown> }).metadata
  const e = await meta(embedding.file)
  const r = await meta(reranker.file)
  t.match(e, { 'general.architecture': 'bert', 'bert.attention.causal': false, 'bert.pooling_type': 2, 'tokenizer.ggml.model': 'bert', 'tokenizer.ggml.token_type_count': 2 })
  t.equal(r['bert.pooling_type'], 4, 'rank')
  const mean = await writeTinyBert({ file: join(dir, 'm.gguf'), llamaCppSrc: src, kind: 'embedding', pooling: 'mean' })
  t.equal((await meta(mean.file))['bert.pooling_type'], 1)
  const again = await writeTinyBert({ file: join(dir, 'e2.gguf'), llamaCppSrc: src, kind: 'embedding' })
  t.same(await readFile(again.file), await readFile(embedding.file), 'the same seed writes the same bytes')
})

t.test('embedding model under --embeddings', async (t) => {
  const { server, model } = await serve(t, 'embedding')
  const e = server.endpoint

  t.test('/v1/embeddings: one unit vector per input, in order, with usage', async (t) => {
    const res = await e.postJson<any>('/v1/embeddings', { input: ['hello world', 'a completely different sentence'], model: 'whatever' }, signal())
    t.equal(res.object, 'list')
    t.equal(res.model, 'whatever', 'the request\'s model name is echoed')
    t.equal(res.data.length, 2)
    for (const [i, d] of res.data.entries()) {
      t.equal(d.object, 'embedding')
      t.equal(d.index, i)
      t.equal(d.embedding.length, model.nEmbd)
      t.ok(finite(d.embedding), 'finite')
      t.ok(Math.abs(norm(d.embedding) - 1) < 1e-4, `L2 norm ${norm(d.embedding)} ≈ 1`)
    }
    t.notSame(res.data[0].embedding, res.data[1].embedding, 'different inputs, different vectors')
    // [CLS] hello world [SEP] = 4, [CLS] a completely different sentence [SEP] = 6
    t.same(res.usage, { prompt_tokens: 10, total_tokens: 10 })
    const single = await e.postJson<any>('/v1/embeddings', { input: 'hello world' }, signal())
    t.equal(single.data.length, 1)
    t.equal(single.model, 'tiny/bert-embedding', 'without one, the alias')
    t.same(single.data[0].embedding, res.data[0].embedding, 'deterministic')
  })

  t.test('/v1/embeddings: embd_normalize in the body is honoured; base64 is little-endian float32', async (t) => {
    const unit = (await e.postJson<any>('/v1/embeddings', { input: 'hello world' }, signal())).data[0].embedding as number[]
    const raw = (await e.postJson<any>('/v1/embeddings', { input: 'hello world', embd_normalize: -1 }, signal())).data[0].embedding as number[]
    t.ok(Math.abs(norm(raw) - 1) > 0.1, `-1: not normalized (norm ${norm(raw)})`)
    const scaled = raw.map((x) => x / norm(raw))
    t.ok(scaled.every((x, i) => Math.abs(x - unit[i]!) < 1e-4), 'the default is the raw vector over its L2 norm')
    const b64 = await e.postJson<any>('/v1/embeddings', { input: 'hello world', encoding_format: 'base64' }, signal())
    t.equal(b64.data[0].encoding_format, 'base64')
    t.type(b64.data[0].embedding, 'string')
    const bytes = Buffer.from(b64.data[0].embedding, 'base64')
    t.equal(bytes.length, 4 * model.nEmbd)
    const decoded = Array.from({ length: model.nEmbd }, (_, i) => bytes.readFloatLE(4 * i))
    t.ok(decoded.every((x, i) => Math.abs(x - unit[i]!) < 1e-6))
    const bad = await post(server, '/v1/embeddings', { input: 'hello', encoding_format: 'int8' })
    t.equal(bad.status, 400)
    t.match(bad.body, { error: { code: 400, type: 'invalid_request_error', message: 'The format to return the embeddings in. Can be either float or base64' } })
  })

  t.test('/embeddings (not OpenAI): an array of {index, embedding: [vector]}', async (t) => {
    const one = await e.postJson<any>('/embeddings', { content: 'hello world' }, signal())
    t.ok(Array.isArray(one))
    t.equal(one.length, 1)
    t.same(Object.keys(one[0]).sort(), ['embedding', 'index'])
    t.equal(one[0].index, 0)
    t.equal(one[0].embedding.length, 1, 'pooled: one vector, nested in an array (per-token vectors under pooling none)')
    t.equal(one[0].embedding[0].length, model.nEmbd)
    t.ok(Math.abs(norm(one[0].embedding[0]) - 1) < 1e-4)
    const raw = await e.postJson<any>('/embeddings', { content: 'hello world', embd_normalize: -1 }, signal())
    t.ok(Math.abs(norm(raw[0].embedding[0]) - 1) > 0.1, 'embd_normalize -1: the raw pooled vector')
    const two = await e.postJson<any>('/embeddings', { input: ['hello', 'world'] }, signal())
    t.same(two.map((r: any) => r.index), [0, 1])
    t.same(two.map((r: any) => r.embedding.length), [1, 1])
    const oai = await e.postJson<any>('/v1/embeddings', { content: 'hello world' }, signal())
    t.ok(Array.isArray(oai), '"content" instead of "input" turns /v1/embeddings into the non-OpenAI shape')
  })

  t.test('/tokenize: WordPiece, [CLS] first and [SEP] last with add_special', async (t) => {
    const special = await e.postJson<any>('/tokenize', { content: 'Hello world, tokenizers!', add_special: true }, signal())
    t.equal(special.tokens[0], model.clsId)
    t.equal(special.tokens.at(-1), model.sepId)
    const plain = await e.postJson<any>('/tokenize', { content: 'Hello world, tokenizers!' }, signal())
    t.same(plain.tokens, special.tokens.slice(1, -1), 'add_special defaults to false')
    const pieces = await e.postJson<any>('/tokenize', { content: 'Hello world, tokenizers!', with_pieces: true }, signal())
    // Lower-cased; a word's first piece is rendered with a leading space, its continuations bare (no ##).
    t.same(pieces.tokens.map((p: any) => p.piece), [' hello', ' world', ' ,', ' token', 'izer', 's', ' !'])
    t.same(pieces.tokens.map((p: any) => p.id), plain.tokens)
  })

  t.test('too long, empty, and what else it serves', async (t) => {
    const long = await post(server, '/v1/embeddings', { input: 'word '.repeat(600) })
    t.equal(long.status, 500, 'more tokens than a ubatch (--embeddings sets n_batch = n_ubatch = 512)')
    t.match(long.body, { error: { code: 500, type: 'server_error', message: 'input (602 tokens) is too large to process. increase the physical batch size (current batch size: 512)' } })
    const empty = await post(server, '/v1/embeddings', { input: '' })
    t.equal(empty.status, 200, 'an empty string is [CLS][SEP], two tokens: embedded as any other')
    t.equal(empty.body.data[0].embedding.length, model.nEmbd)
    t.same(empty.body.usage, { prompt_tokens: 2, total_tokens: 2 })
    const noTokens = await post(server, '/v1/embeddings', { input: [[]] })
    t.equal(noTokens.status, 400, 'only an empty list of token ids is empty')
    t.match(noTokens.body, { error: { code: 400, type: 'invalid_request_error', message: 'Input content cannot be empty' } })
    const noInputs = await post(server, '/v1/embeddings', { input: [] })
    t.equal(noInputs.status, 500)
    t.match(noInputs.body, { error: { code: 500, type: 'server_error', message: '"prompt" must not be empty' } })
    const ids = await e.postJson<any>('/v1/embeddings', { input: [[model.clsId, 7592, model.sepId]] }, signal())
    t.equal(ids.usage.prompt_tokens, 3, 'token ids are taken as they are: no [CLS]/[SEP] added')
    const none = await post(server, '/v1/embeddings', { model: 'x' })
    t.equal(none.status, 400)
    t.match(none.body, { error: { message: '"input" or "content" must be provided' } })
    const rerank = await post(server, '/v1/rerank', { query: 'q', documents: ['d'] })
    t.equal(rerank.status, 501)
    t.match(rerank.body, { error: { code: 501, type: 'not_supported_error', message: 'This server does not support reranking. Start it with `--reranking`' } })
    const chat = await post(server, '/v1/chat/completions', { messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 })
    t.equal(chat.status, 500, 'no KV cache, no logits: a BERT server generates nothing')
    t.match(chat.body, { error: { message: 'the current context does not logits computation. skipping' } })
  })
})

t.test('mean pooling; an embedding input longer than a slot\'s context: 400 exceed_context_size_error', async (t) => {
  // Two slots of 256 tokens each; a ubatch still holds 512, so the context check is the one that trips.
  const { server, model } = await serve(t, 'embedding', { ctxSize: 512, parallel: 2, pooling: 'mean' })
  const fits = await post(server, '/v1/embeddings', { input: 'word '.repeat(254) })
  t.equal(fits.status, 200, '256 tokens fill a slot exactly')
  t.equal(fits.body.usage.prompt_tokens, 256)
  t.equal(fits.body.data[0].embedding.length, model.nEmbd)
  t.ok(Math.abs(norm(fits.body.data[0].embedding) - 1) < 1e-4)
  const res = await post(server, '/v1/embeddings', { input: 'word '.repeat(300) })
  t.equal(res.status, 400)
  t.match(res.body, { error: { code: 400, type: 'exceed_context_size_error', message: 'input (302 tokens) is larger than the max context size (256 tokens). skipping', n_prompt_tokens: 302, n_ctx: 256 } })
})

t.test('reranker under --reranking', async (t) => {
  const { server } = await serve(t, 'reranker')
  const e = server.endpoint
  const documents = ['Paris is the capital of France.', 'Bananas are yellow.', 'The Eiffel Tower is in Paris.']
  const query = 'What is the capital of France?'

  t.test('/v1/rerank: one {index, relevance_score} per document, best first, with usage', async (t) => {
    const res = await e.postJson<any>('/v1/rerank', { query, documents }, signal())
    t.equal(res.object, 'list')
    t.equal(res.model, 'tiny/bert-reranker')
    t.equal(res.results.length, 3)
    for (const r of res.results) {
      t.same(Object.keys(r).sort(), ['index', 'relevance_score'])
      t.ok(Number.isFinite(r.relevance_score))
    }
    t.same(res.results.map((r: any) => r.index).sort(), [0, 1, 2])
    const scores = res.results.map((r: any) => r.relevance_score) as number[]
    t.same(scores, [...scores].sort((a, b) => b - a), 'sorted by score, highest first')
    t.equal(new Set(scores).size, 3, 'the scores differ (the head reads the [CLS] of each pair)')
    // [CLS] query [SEP] document: no trailing [SEP] (add_eos is false for WordPiece vocabularies).
    const length = async (text: string): Promise<number> => (await e.postJson<any>('/tokenize', { content: text }, signal())).tokens.length
    let expected = 0
    for (const d of documents) expected += 2 + await length(query) + await length(d)
    t.equal(res.usage.prompt_tokens, expected)
    t.equal(res.usage.total_tokens, res.usage.prompt_tokens)
    const top = await e.postJson<any>('/v1/rerank', { query, documents, top_n: 2 }, signal())
    t.same(top.results, res.results.slice(0, 2), 'top_n: the best n')
    t.equal(top.usage.prompt_tokens, res.usage.prompt_tokens, 'usage counts every document, top_n or not')
    const tei = await e.postJson<any>('/rerank', { query, texts: documents, return_text: true }, signal())
    t.ok(Array.isArray(tei), '"texts" (TEI): a bare array')
    t.same(tei.map((r: any) => [r.index, r.score, r.text]), res.results.map((r: any) => [r.index, r.relevance_score, documents[r.index]]))
  })

  t.test('/v1/rerank refusals', async (t) => {
    const noQuery = await post(server, '/v1/rerank', { documents })
    t.equal(noQuery.status, 400)
    t.match(noQuery.body, { error: { message: '"query" must be provided' } })
    const noDocs = await post(server, '/v1/rerank', { query, documents: [] })
    t.equal(noDocs.status, 400)
    t.match(noDocs.body, { error: { message: '"documents" must be a non-empty string array' } })
    const none = await e.postJson<any>('/v1/rerank', { query, documents, top_n: 0 }, signal())
    t.same(none.results, [], 'top_n 0: no results, still a 200')
    const negative = await post(server, '/v1/rerank', { query, documents, top_n: -1 })
    t.equal(negative.status, 500, 'a negative top_n is not checked: the resize throws')
    t.match(negative.body, { error: { code: 500, type: 'server_error', message: 'vector::_M_default_append' } })
    const empty = await e.postJson<any>('/v1/rerank', { query: '', documents: [''] }, signal())
    t.equal(empty.usage.prompt_tokens, 2, 'empty query and document: [CLS] [SEP], still scored')
    t.ok(Number.isFinite(empty.results[0].relevance_score))
  })
})
