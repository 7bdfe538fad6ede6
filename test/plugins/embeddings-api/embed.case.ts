import { Ollama } from 'ollama'
import OpenAI from 'openai'
import t, { type Test } from 'tap'
import { post, serveRealisticModels, sharedServer } from '../../helpers/inference.js'

const MODELS = { 'acme/bge': 'bert', 'acme/rerank': 'reranker', 'acme/chat': 'qwen25' } as const

// One gateway for the tests that only embed; those that look at what is loaded (/api/ps) have their own.
const models = sharedServer(() => serveRealisticModels(t, MODELS))

function norm (v: number[]): number {
  return Math.sqrt(v.reduce((sum, x) => sum + x * x, 0))
}
function unit (v: number[]): number[] {
  const n = norm(v)
  return v.map((x) => x / n)
}
function close (t: Test, actual: number[], expected: number[], what: string, tolerance = 1e-5): void {
  t.equal(actual.length, expected.length, `${what}: same length`)
  const worst = Math.max(...actual.map((x, i) => Math.abs(x - expected[i]!)))
  t.ok(worst < tolerance, `${what}: equal within ${tolerance} (worst ${worst})`)
}

async function embeddingLength (url: string, model: string): Promise<number> {
  const show = await (await post(`${url}/api/show`, { model })).json() as { model_info: Record<string, unknown> }
  const arch = show.model_info['general.architecture'] as string
  return show.model_info[`${arch}.embedding_length`] as number
}

t.test('/api/embed: one input and several, normalized vectors of the model\'s length, in order', async (t) => {
  const { url } = await models()
  const length = await embeddingLength(url, 'acme/bge')
  t.equal(length, 64, 'the fixture\'s embedding length, from its GGUF')
  const one = await post(`${url}/api/embed`, { model: 'acme/bge', input: 'The quick brown fox' })
  t.equal(one.status, 200)
  const single = await one.json() as any
  t.equal(single.model, 'acme/bge')
  t.equal(single.embeddings.length, 1)
  t.equal(single.embeddings[0].length, length)
  t.ok(Math.abs(norm(single.embeddings[0]) - 1) < 1e-4, 'L2-normalized, as llama-server returns them')
  t.ok(single.prompt_eval_count >= 6, `prompt_eval_count counts the tokens with [CLS] and [SEP] (${single.prompt_eval_count})`)
  t.ok(single.total_duration > 0 && single.total_duration >= single.load_duration, 'durations in nanoseconds')

  const batch = await (await post(`${url}/api/embed`, { model: 'acme/bge', input: ['jumps over', 'The quick brown fox', 'the lazy dog'] })).json() as any
  t.equal(batch.embeddings.length, 3)
  close(t, batch.embeddings[1], single.embeddings[0], 'the same text in a batch gets the same vector, in its place')
  t.notSame(batch.embeddings[0], batch.embeddings[2], 'different texts, different vectors')
  t.ok(batch.prompt_eval_count > single.prompt_eval_count, 'the batch counts every input\'s tokens')

  const short = await (await post(`${url}/api/embed`, { model: 'acme/bge', input: 'The quick brown fox', dimensions: 16 })).json() as any
  t.equal(short.embeddings[0].length, 16, 'dimensions shortens')
  close(t, short.embeddings[0], unit(single.embeddings[0].slice(0, 16)), 'the first 16 values, normalized again')

  const ollama = new Ollama({ host: url })
  const viaClient = await ollama.embed({ model: 'acme/bge', input: ['The quick brown fox', 'the lazy dog'] })
  t.equal(viaClient.embeddings.length, 2, 'ollama.embed()')
  close(t, viaClient.embeddings[0]!, single.embeddings[0], 'ollama.embed() gets the same vector')
  const legacyClient = await ollama.embeddings({ model: 'acme/bge', prompt: 'The quick brown fox' })
  t.equal(legacyClient.embedding.length, length, 'ollama.embeddings() (the legacy route)')
})

t.test('inputs longer than the context: truncated by default, refused with truncate: false', async (t) => {
  const { url } = await models()
  const long = 'the lazy dog '.repeat(300)
  const cut = await post(`${url}/api/embed`, { model: 'acme/bge', input: long })
  t.equal(cut.status, 200)
  const body = await cut.json() as any
  t.equal(body.prompt_eval_count, 512, 'cut to the 512 tokens of the context, [SEP] kept last')
  t.equal(body.embeddings[0].length, 64)
  const prefix = 'the lazy dog '.repeat(200)
  const same = await (await post(`${url}/api/embed`, { model: 'acme/bge', input: prefix })).json() as any
  t.equal(same.prompt_eval_count, 512, 'a shorter text, still over the context (602 tokens), is cut to the same 512')
  close(t, same.embeddings[0], body.embeddings[0], 'both are cut to the same 512 tokens')
  const refused = await post(`${url}/api/embed`, { model: 'acme/bge', input: ['short', long], truncate: false })
  t.equal(refused.status, 400)
  t.match(await refused.json(), { error: /^the input length exceeds the context length: input 1 is \d+ tokens, the context holds 512/ })
  const openai = await post(`${url}/v1/embeddings`, { model: 'acme/bge', input: long, truncate: false })
  t.equal(openai.status, 400)
  t.match(await openai.json(), { error: { message: /exceeds the context length/, type: 'invalid_request_error', code: 'input_too_long' } })
  const legacy = await post(`${url}/api/embeddings`, { model: 'acme/bge', prompt: long })
  t.equal(legacy.status, 200, 'the legacy route truncates')
})

t.test('/v1/embeddings through the official openai client: floats, base64, token ids, dimensions, usage', async (t) => {
  const { url } = await models()
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'anything' })
  const floats = await client.embeddings.create({ model: 'acme/bge', input: ['The quick brown fox', 'the lazy dog'], encoding_format: 'float' })
  t.equal(floats.object, 'list')
  t.equal(floats.model, 'acme/bge')
  t.same(floats.data.map((d) => [d.object, d.index, d.embedding.length]), [['embedding', 0, 64], ['embedding', 1, 64]])
  t.ok(floats.usage.prompt_tokens > 0 && floats.usage.total_tokens === floats.usage.prompt_tokens, 'usage')
  // The SDK asks for base64 when no format is given, and decodes it.
  const decoded = await client.embeddings.create({ model: 'acme/bge', input: ['The quick brown fox', 'the lazy dog'] })
  close(t, decoded.data[0]!.embedding, floats.data[0]!.embedding, 'base64 decodes to the float32 values', 1e-6)
  const raw = await (await post(`${url}/v1/embeddings`, { model: 'acme/bge', input: 'The quick brown fox', encoding_format: 'base64' })).json() as any
  t.type(raw.data[0].embedding, 'string', 'base64 on the wire')
  const bytes = Buffer.from(raw.data[0].embedding, 'base64')
  t.equal(bytes.length, 64 * 4, 'little-endian float32')
  close(t, Array.from(new Float32Array(bytes.buffer, bytes.byteOffset, 64)), floats.data[0]!.embedding, 'the same vector')
  const short = await client.embeddings.create({ model: 'acme/bge', input: 'The quick brown fox', dimensions: 8, encoding_format: 'float' })
  t.equal(short.data[0]!.embedding.length, 8, 'dimensions')
  t.ok(Math.abs(norm(short.data[0]!.embedding) - 1) < 1e-4, 'shortened vectors are normalized again')
  const ids = await (await post(`${url}/v1/embeddings`, { model: 'acme/bge', input: 'The quick brown fox' })).json() as any
  const tokens = await (await post(`${url}/v1/embeddings`, { model: 'acme/bge', input: [[101, 1996, 4248, 2829, 4419, 102]] })).json() as any
  t.equal(tokens.usage.prompt_tokens, 6, 'token ids are embedded as given')
  t.equal(ids.usage.prompt_tokens, 6, 'the text tokenizes to [CLS] the quick brown fox [SEP]')
  close(t, tokens.data[0].embedding, ids.data[0].embedding, 'the same tokens as the text, the same vector')
})

t.test('/api/embeddings (legacy): one raw vector; the load forms load an embedding instance', async (t) => {
  const { url } = await serveRealisticModels(t, MODELS)
  const legacy = await (await post(`${url}/api/embeddings`, { model: 'acme/bge', prompt: 'The quick brown fox' })).json() as any
  const normalized = await (await post(`${url}/api/embed`, { model: 'acme/bge', input: 'The quick brown fox' })).json() as any
  t.equal(legacy.embedding.length, 64)
  t.ok(Math.abs(norm(legacy.embedding) - 1) > 1e-3, `not normalized, as in Ollama (norm ${norm(legacy.embedding)})`)
  close(t, unit(legacy.embedding), normalized.embeddings[0], 'the same direction as /api/embed\'s', 1e-4)

  await post(`${url}/api/stop`, { model: 'acme/bge' })
  const load = await post(`${url}/api/embed`, { model: 'acme/bge', input: [] })
  t.same(await load.json(), { model: 'acme/bge', embeddings: [] }, 'no input: the model loads, nothing is embedded')
  const ps = await (await fetch(`${url}/api/ps`)).json() as any
  t.match(ps.models, [{ name: 'acme/bge', state: 'loaded', purpose: 'embed', context_length: 512 }], 'loaded to embed; num_ctx capped at the 512 the encoder was trained with')
  t.same(await (await post(`${url}/api/embeddings`, { model: 'acme/bge', prompt: '' })).json(), { embedding: [] }, 'an empty prompt only loads')
})

t.test('a chat model embeds on an instance of its own, beside its chat instance', async (t) => {
  const { url } = await serveRealisticModels(t, MODELS)
  const chat = await post(`${url}/api/chat`, { model: 'acme/chat', stream: false, messages: [{ role: 'user', content: 'hi' }], options: { num_predict: 2 } })
  t.equal(chat.status, 200)
  const embedded = await (await post(`${url}/api/embed`, { model: 'acme/chat', input: ['hello world', 'goodbye'] })).json() as any
  t.equal(embedded.embeddings.length, 2)
  t.equal(embedded.embeddings[0].length, 64, 'the chat model\'s width')
  t.ok(Math.abs(norm(embedded.embeddings[0]) - 1) < 1e-4, 'normalized')
  const ps = await (await fetch(`${url}/api/ps`)).json() as any
  t.same(ps.models.map((m: any) => `${m.name} ${m.purpose}`).sort(), ['acme/chat embed', 'acme/chat generate'], 'two instances, one for each purpose')
  const again = await post(`${url}/api/chat`, { model: 'acme/chat', stream: false, messages: [{ role: 'user', content: 'hi' }], options: { num_predict: 2 } })
  t.equal(again.status, 200, 'the chat instance still answers')
  t.equal(((await (await fetch(`${url}/api/ps`)).json()) as any).models.length, 2, 'and neither replaced the other')
})

t.test('bad embedding requests: 4xx in the surface\'s shape', async (t) => {
  const { url } = await serveRealisticModels(t, MODELS)
  const native: Array<[string, string, unknown, number, RegExp]> = [
    ['an empty string among inputs', '/api/embed', { model: 'acme/bge', input: ['fine', ''] }, 400, /^input 1 is an empty string/],
    ['a number as input', '/api/embed', { model: 'acme/bge', input: 5 }, 400, /input/],
    ['numbers in the list', '/api/embed', { model: 'acme/bge', input: ['a', 3] }, 400, /input/],
    ['dimensions of 0', '/api/embed', { model: 'acme/bge', input: 'a', dimensions: 0 }, 400, /dimensions/],
    ['more dimensions than the model has', '/api/embed', { model: 'acme/bge', input: 'a', dimensions: 65 }, 400, /dimensions 65 is more than the model's embedding length of 64/],
    ['truncate not a boolean', '/api/embed', { model: 'acme/bge', input: 'a', truncate: 'no' }, 400, /truncate/],
    ['an unknown model', '/api/embed', { model: 'acme/nope', input: 'a' }, 404, /model "acme\/nope" not found/],
    ['a reranker asked to embed', '/api/embed', { model: 'acme/rerank', input: 'a' }, 400, /"acme\/rerank" does not support embeddings: it is a reranker; use \/v1\/rerank/],
    ['a prompt that is no string', '/api/embeddings', { model: 'acme/bge', prompt: ['a'] }, 400, /prompt/],
    ['chat with an embedding model', '/api/chat', { model: 'acme/bge', messages: [{ role: 'user', content: 'hi' }] }, 400, /"acme\/bge" does not support chat or generate: it is an embedding model; use \/api\/embed or \/v1\/embeddings/],
    ['generate with an embedding model', '/api/generate', { model: 'acme/bge', prompt: 'hi' }, 400, /does not support chat or generate: it is an embedding model/],
  ]
  for (const [what, path, body, status, message] of native) {
    const res = await post(`${url}${path}`, body)
    t.equal(res.status, status, `${what}: ${status}`)
    t.match(await res.json(), { error: message }, `${what}: the native shape says why`)
  }
  const openai: Array<[string, string, unknown, number, RegExp]> = [
    ['an empty string', '/v1/embeddings', { model: 'acme/bge', input: '' }, 400, /input/],
    ['an empty list', '/v1/embeddings', { model: 'acme/bge', input: [] }, 400, /input/],
    ['a list with an empty string', '/v1/embeddings', { model: 'acme/bge', input: ['a', ''] }, 400, /input/],
    ['an object', '/v1/embeddings', { model: 'acme/bge', input: { text: 'a' } }, 400, /input/],
    ['no input', '/v1/embeddings', { model: 'acme/bge' }, 400, /input/],
    ['an unknown encoding', '/v1/embeddings', { model: 'acme/bge', input: 'a', encoding_format: 'int8' }, 400, /encoding_format/],
    ['negative token ids', '/v1/embeddings', { model: 'acme/bge', input: [-1, 2] }, 400, /input/],
    ['chat completions with an embedding model', '/v1/chat/completions', { model: 'acme/bge', messages: [{ role: 'user', content: 'hi' }] }, 400, /does not support chat or generate: it is an embedding model/],
    ['rerank with an embedding model', '/v1/rerank', { model: 'acme/bge', query: 'q', documents: ['a'] }, 400, /"acme\/bge" does not support reranking: it is an embedding model; rerank with a reranker/],
    ['rerank with a chat model', '/v1/rerank', { model: 'acme/chat', query: 'q', documents: ['a'] }, 400, /"acme\/chat" does not support reranking: it is a chat model/],
  ]
  for (const [what, path, body, status, message] of openai) {
    const res = await post(`${url}${path}`, body)
    t.equal(res.status, status, `${what}: ${status}`)
    t.match(await res.json(), { error: { message, type: 'invalid_request_error' } }, `${what}: OpenAI's shape says why`)
  }
  const ps = await (await fetch(`${url}/api/ps`)).json() as any
  t.same(ps.models, [], 'no bad request loaded anything')
})

t.test('a batch larger than the slots: spread over them by llama-server, every vector in its input\'s place', async (t) => {
  const { url } = await serveRealisticModels(t, { 'acme/bge': 'bert' }, { models: { 'acme/bge': { options: { num_parallel: 3 } } } })
  const texts = Array.from({ length: 10 }, (_, i) => `sentence number ${i} about ${'foxes '.repeat(i)}`)
  const batch = await (await post(`${url}/api/embed`, { model: 'acme/bge', input: texts })).json() as any
  t.equal(batch.embeddings.length, 10)
  for (const i of [0, 4, 9]) {
    const one = await (await post(`${url}/api/embed`, { model: 'acme/bge', input: texts[i] })).json() as any
    close(t, batch.embeddings[i], one.embeddings[0], `input ${i} alone gets the vector it got in the batch`, 1e-4)
  }
  const ps = await (await fetch(`${url}/api/ps`)).json() as any
  t.equal(ps.models[0].num_parallel, 3, 'one instance with three slots')
})
