import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { Ollama } from 'ollama'
import OpenAI from 'openai'
import t from 'tap'
import { thinkFields } from '../../../plugins/native-api/think-fields.js'
import type { ModelRecord } from '../../../plugins/storage/model-record.js'
import { post, serveRealisticModels, sharedServer } from '../../helpers/inference.js'
import { runtimeSource } from '../../helpers/realistic-models.js'

// One gateway and llama-server for the tests that only send requests (a test with other settings has its own).
const r1 = sharedServer(() => serveRealisticModels(t, { 'acme/r1': 'r1' }))

// Thinking on a tiny random-weight model with DeepSeek-R1-Distill-Qwen's real template: its answer opens with
// <think>, so what the model writes (noise, far from a closing </think> in a few tokens) is reasoning, and
// llama-server hands it back apart from the answer.

t.test('think: the reasoning lands in message.thinking (chat) and thinking (generate), streamed and not', async (t) => {
  const { url } = await r1()
  const ollama = new Ollama({ host: url })
  const whole = await ollama.chat({ model: 'acme/r1', messages: [{ role: 'user', content: 'why?' }], think: true, options: { num_predict: 8, seed: 1 } })
  t.ok((whole.message.thinking ?? '').length > 0, `message.thinking: ${JSON.stringify(whole.message.thinking)}`)
  t.equal(whole.message.content, '', 'nothing of it in the answer')
  let thinking = ''
  let content = ''
  for await (const part of await ollama.chat({ model: 'acme/r1', messages: [{ role: 'user', content: 'why?' }], think: true, stream: true, options: { num_predict: 8, seed: 1 } })) {
    thinking += part.message.thinking ?? ''
    content += part.message.content
  }
  t.equal(thinking, whole.message.thinking, 'streamed, the same reasoning in pieces (same seed)')
  t.equal(content, '')
  const generated = await ollama.generate({ model: 'acme/r1', prompt: 'why?', think: 'high', options: { num_predict: 8, seed: 2 } })
  t.ok((generated.thinking ?? '').length > 0, `generate: thinking ${JSON.stringify(generated.thinking)}`)
  const raw = await post(`${url}/api/generate`, { model: 'acme/r1', prompt: 'why?', stream: true, options: { num_predict: 6 } }, { accept: 'application/x-ndjson' })
  const events = (await raw.text()).trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>)
  t.ok(events.some((e) => typeof e.thinking === 'string' && e.thinking !== ''), 'NDJSON events carry thinking')
})

t.test('think levels: each turns thinking on, and reaches the template as its reasoning effort (max as high for gpt-oss)', async (t) => {
  const { url } = await r1()
  const res = await post(`${url}/api/chat`, { model: 'acme/r1', stream: false, think: 'max', messages: [{ role: 'user', content: 'why?' }], options: { num_predict: 4, seed: 1 } })
  t.equal(res.status, 200, 'max is one of Ollama\'s levels')
  t.ok(((await res.json() as { message: { thinking?: string } }).message.thinking ?? '').length > 0, 'and the answer thinks')
  // What llama-server is sent, for the real gpt-oss template (harmony) and R1's (no effort of its own).
  const { source } = await runtimeSource()
  const record = (template: string): ModelRecord => ({ name: 'acme/m', kind: 'chat', template, gguf: null, projector: null, projectorInputs: [] }) as unknown as ModelRecord
  const oss = record(await readFile(join(source, 'models', 'templates', 'openai-gpt-oss-120b.jinja'), 'utf8'))
  const r1Template = record(await readFile(join(source, 'models', 'templates', 'deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja'), 'utf8'))
  const on = { enable_thinking: true }
  t.same(thinkFields(oss, 'max'), { chat_template_kwargs: on, reasoning_effort: 'high' }, 'gpt-oss: max is high, as Ollama maps it')
  t.same(thinkFields(oss, 'low'), { chat_template_kwargs: on, reasoning_effort: 'low' })
  t.same(thinkFields(r1Template, 'max'), { chat_template_kwargs: on, reasoning_effort: 'max' }, 'elsewhere the word as it is (DeepSeek V4 reads max)')
  t.same(thinkFields(oss, true), { chat_template_kwargs: on }, 'true: on, the template\'s own effort')
  t.same(thinkFields(oss, false), { reasoning_effort: 'none' }, 'false: none')
  t.same(thinkFields(oss, undefined), {}, 'unset: the model\'s default')
})

t.test('/v1/chat/completions on the same model: reasoning_content apart from content', async (t) => {
  const { url } = await r1()
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'unused', maxRetries: 0 })
  const completion = await client.chat.completions.create({ model: 'acme/r1', messages: [{ role: 'user', content: 'why?' }], max_tokens: 8, seed: 1 })
  const message = completion.choices[0]!.message as { content: string | null, reasoning_content?: string }
  t.ok((message.reasoning_content ?? '').length > 0, `reasoning_content: ${JSON.stringify(message.reasoning_content)}`)
  t.notOk(message.content, 'no answer text yet')
})

t.test('bad think values and images for a model without a projector: 400 that says so', async (t) => {
  const { url } = await r1()
  const cases: Array<[string, string, Record<string, unknown>, RegExp]> = [
    ['think of another type', '/api/chat', { messages: [{ role: 'user', content: 'hi' }], think: 3 }, /think/],
    ['think an unknown word', '/api/chat', { messages: [{ role: 'user', content: 'hi' }], think: 'max-ish' }, /think/],
    ['images on chat', '/api/chat', { messages: [{ role: 'user', content: 'what is this?', images: ['iVBORw0KGgo='] }] }, /does not support images: it has no vision projector/],
    ['images on generate', '/api/generate', { prompt: 'what is this?', images: ['iVBORw0KGgo='] }, /does not support images: it has no vision projector/],
  ]
  for (const [what, path, body, message] of cases) {
    const res = await post(`${url}${path}`, { model: 'acme/r1', stream: false, ...body })
    t.equal(res.status, 400, `${what}: 400`)
    t.match(await res.json(), { error: message }, `${what}: says why`)
  }
  const { url: qwenUrl } = await serveRealisticModels(t, { 'acme/qwen': 'qwen25' })
  for (const think of [true, 'low'] as const) {
    const res = await post(`${qwenUrl}/api/chat`, { model: 'acme/qwen', stream: false, think, messages: [{ role: 'user', content: 'hi' }] })
    t.equal(res.status, 400, `think ${think} on a model whose template has no reasoning: 400`)
    t.same(await res.json(), { error: '"acme/qwen" does not support thinking' }, 'Ollama\'s words')
  }
  const off = await post(`${qwenUrl}/api/chat`, { model: 'acme/qwen', stream: false, think: false, messages: [{ role: 'user', content: 'hi' }], options: { num_predict: 1 } })
  t.equal(off.status, 200, 'think: false is fine anywhere')
  const empty = await post(`${url}/api/chat`, { model: 'acme/r1', stream: false, messages: [{ role: 'user', content: 'hi', images: [] }], options: { num_predict: 1 } })
  t.equal(empty.status, 200, 'an empty images list is no image')
})
