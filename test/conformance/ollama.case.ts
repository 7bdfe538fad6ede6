import t, { type Test } from 'tap'
import { ollamaSpec, type SpecCheck } from '../helpers/api-specs.js'
import { post } from '../helpers/inference.js'
import { tinyGgufBytes } from '../helpers/tiny-gguf.js'
import { fits, ndjsonOf, sseOf } from '../helpers/spec-streams.js'
import { conformanceServer as server } from './conformance-server.js'

type Json = Record<string, any>

// What the native endpoints answer, judged by Ollama's OpenAPI document (test/fixtures/specs/ollama, pinned), on
// ollama_listen (NDJSON, Ollama's own format) and on the main address (SSE, the product's: each event's data is the
// same object). The models are tiny and random: the shapes are the test.

const WEATHER = { type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { enum: ['Paris', 'Lima'] } }, required: ['city'], additionalProperties: false } } }
const messages = [{ role: 'user', content: 'What is the weather in Paris?' }]
const ERROR = ollamaSpec.schema('ErrorResponse')

/** Both addresses: the main one (SSE streams) and ollama_listen (NDJSON). */
async function addresses (): Promise<Array<[string, string, (res: Response) => Promise<unknown[]>]>> {
  const { app, url } = await server()
  return [
    ['main address (SSE)', url, async (res) => (await sseOf(res)).map((e) => e.data)],
    ['ollama_listen (NDJSON)', app.ollamaListener!.url, ndjsonOf],
  ]
}

/** A stream's lines: every one but the last fits `event`, the last (done, with the statistics) fits `final`. */
function checkLines (t: Test, lines: unknown[], event: SpecCheck, final: SpecCheck, what: string): void {
  const last = lines.at(-1) as { done?: boolean }
  t.equal(last?.done, true, `${what}: done last`)
  lines.slice(0, -1).forEach((line, i) => fits(t, event, line, `${what}: line ${i}`))
  fits(t, final, last, `${what}: the last line`)
}

t.test('POST /api/chat and /api/generate: streamed and whole, with tools, on both addresses', async (t) => {
  for (const [where, url, read] of await addresses()) {
    // With logprobs and top_logprobs: Ollama's Logprob objects on the events and the whole answer.
    const chat = { model: 'acme/qwen', messages, options: { num_predict: 6 }, logprobs: true, top_logprobs: 2 }
    checkLines(t, await read(await post(`${url}/api/chat`, chat)), ollamaSpec.response('/api/chat', 'post', '200', 'application/x-ndjson'), ollamaSpec.response('/api/chat', 'post', '200'), `${where} chat streamed`)
    fits(t, ollamaSpec.response('/api/chat', 'post', '200'), await (await post(`${url}/api/chat`, { ...chat, stream: false })).json(), `${where} chat whole`)
    const called = await (await post(`${url}/api/chat`, { model: 'acme/caller', messages, tools: [WEATHER], stream: false, options: { num_predict: 200 } })).json() as Json
    fits(t, ollamaSpec.response('/api/chat', 'post', '200'), called, `${where} chat with a tool call`)
    t.equal(called.message.tool_calls?.[0]?.function?.name, 'get_weather', `${where}: the call`)
    const generate = { model: 'acme/qwen', prompt: 'Once upon a time', options: { num_predict: 6 }, logprobs: true }
    checkLines(t, await read(await post(`${url}/api/generate`, generate)), ollamaSpec.response('/api/generate', 'post', '200', 'application/x-ndjson'), ollamaSpec.response('/api/generate', 'post', '200'), `${where} generate streamed`)
    fits(t, ollamaSpec.response('/api/generate', 'post', '200'), await (await post(`${url}/api/generate`, { ...generate, stream: false })).json(), `${where} generate whole`)
  }
})

t.test('POST /api/embed; GET /api/tags, /api/ps, /api/version; POST /api/show', async (t) => {
  for (const [where, url] of await addresses()) {
    fits(t, ollamaSpec.response('/api/embed', 'post', '200'), await (await post(`${url}/api/embed`, { model: 'acme/bert', input: ['a cat', 'a dog'] })).json(), `${where} embed`)
    fits(t, ollamaSpec.response('/api/tags', 'get', '200'), await (await fetch(`${url}/api/tags`)).json(), `${where} tags`)
    fits(t, ollamaSpec.response('/api/ps', 'get', '200'), await (await fetch(`${url}/api/ps`)).json(), `${where} ps`)
    fits(t, ollamaSpec.response('/api/version', 'get', '200'), await (await fetch(`${url}/api/version`)).json(), `${where} version`)
    fits(t, ollamaSpec.response('/api/show', 'post', '200'), await (await post(`${url}/api/show`, { model: 'acme/qwen' })).json(), `${where} show`)
  }
})

t.test('POST /api/create, /api/copy; DELETE /api/delete', async (t) => {
  for (const [where, url, read] of await addresses()) {
    const name = where.startsWith('main') ? 'acme/made-main' : 'acme/made-listen'
    const lines = await read(await post(`${url}/api/create`, { model: name, from: 'acme/qwen', system: 'Be brief.' }))
    lines.forEach((line, i) => fits(t, ollamaSpec.response('/api/create', 'post', '200', 'application/x-ndjson'), line, `${where} create, line ${i}`))
    t.match(lines.at(-1), { status: 'success' })
    fits(t, ollamaSpec.response('/api/create', 'post', '200'), await (await post(`${url}/api/create`, { model: `${name}-2`, from: 'acme/qwen', stream: false })).json(), `${where} create whole`)
    // Copy and delete: the document gives their 200 no body (llamagate says what it did, in a status object).
    t.equal((await post(`${url}/api/copy`, { source: name, destination: `${name}-copy` })).status, 200)
    for (const model of [name, `${name}-2`, `${name}-copy`]) {
      t.equal((await fetch(`${url}/api/delete`, { method: 'DELETE', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model }) })).status, 200)
    }
  }
})

t.test('errors: an unknown model, a bad request, before and after a stream opens', async (t) => {
  for (const [where, url, read] of await addresses()) {
    for (const [status, path, body] of [[404, '/api/chat', { model: 'acme/nope', messages }], [400, '/api/chat', { model: 'acme/qwen', messages: 'no' }], [404, '/api/show', { model: 'acme/nope' }]] as const) {
      const res = await post(`${url}${path}`, body)
      t.equal(res.status, status, `${where} ${path}: ${status}`)
      fits(t, ERROR, await res.json(), `${where} ${path} ${status}`)
    }
    // Stopped mid-stream: the last line is the error.
    const res = await post(`${url}/api/generate`, { model: 'acme/qwen', prompt: 'go on', options: { num_predict: 900, ignore_eos: true } })
    const reader = res.body!.getReader()
    let text = ''
    while (!text.includes('"response"')) text += new TextDecoder().decode((await reader.read()).value)
    t.equal((await post(`${url}/api/stop`, { model: 'acme/qwen' })).status, 200)
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) text += new TextDecoder().decode(chunk.value)
    const lines = await read(new Response(text, { headers: res.headers }))
    fits(t, ERROR, lines.at(-1), `${where}: the stream's error`)
  }
})

t.test('POST /api/pull: streamed and whole, and its errors, from a hub on loopback', async (t) => {
  const { app, url, hub } = await server()
  const before = new Set(app.store.list().map((m) => m.name))
  // A repository per address: a second pull of the same model would have nothing to download.
  for (const repo of ['acme/main-GGUF', 'acme/listen-GGUF']) {
    hub.addRepo(repo, { files: [{ path: 'tiny-Q4_K_M.gguf', content: await tinyGgufBytes(t, 1) }, { path: 'tiny-Q8_0.gguf', content: await tinyGgufBytes(t, 2) }] })
  }
  const where: Array<[string, string, (res: Response) => Promise<unknown[]>, string]> = [
    ['main address (SSE)', url, async (res) => (await sseOf(res)).map((e) => e.data), 'acme/main-GGUF'],
    ['ollama_listen (NDJSON)', app.ollamaListener!.url, ndjsonOf, 'acme/listen-GGUF'],
  ]
  const event = ollamaSpec.response('/api/pull', 'post', '200', 'application/x-ndjson')
  for (const [name, base, read, repo] of where) {
    const lines = await read(await post(`${base}/api/pull`, { model: `${repo}:Q4_K_M` }))
    t.ok(lines.length > 2, `${name}: ${lines.length} status lines`)
    lines.forEach((line, i) => fits(t, event, line, `${name} pull, line ${i}`))
    t.match(lines.at(-1), { status: 'success' })
    fits(t, ollamaSpec.response('/api/pull', 'post', '200'), await (await post(`${base}/api/pull`, { model: `${repo}:Q8_0`, stream: false })).json(), `${name} pull whole`)
    const missing = await post(`${base}/api/pull`, { model: 'acme/nothing-here', stream: false })
    t.ok(missing.status >= 400, `${name}: an unknown repository answers ${missing.status}`)
    fits(t, ERROR, await missing.json(), `${name}: its error`)
  }
  // The store as it was: the other conformance files list the shared gateway's models.
  for (const { name } of app.store.list()) if (!before.has(name)) await app.store.delete(name)
})
