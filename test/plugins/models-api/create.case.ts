import { createHash } from 'node:crypto'
import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { Ollama } from 'ollama'
import t from 'tap'
import { ollamaDetails } from '../../../plugins/models-api/tag-shape.js'
import { writeTinyGguf } from '../../../scripts/fixtures/tiny-model.js'
import { tempDir } from '../../helpers/app.js'
import { post, serveRealisticModels, serveTinyModels } from '../../helpers/inference.js'

const digestOf = (bytes: Buffer): string => `sha256:${createHash('sha256').update(bytes).digest('hex')}`

async function upload (url: string, digest: string, bytes: Buffer): Promise<number> {
  return (await fetch(`${url}/api/blobs/${digest}`, { method: 'POST', headers: { 'content-type': 'application/octet-stream' }, body: bytes })).status
}

t.test('blobs: HEAD says whether it is there; POST stores a verified upload (201), again is 200, a wrong digest 400', async (t) => {
  const { app, url } = await serveTinyModels(t)
  const bytes = await readFile((await writeTinyGguf({ file: join(await tempDir(t), 'b.gguf'), seed: 9 })).file)
  const digest = digestOf(bytes)
  t.equal((await fetch(`${url}/api/blobs/${digest}`, { method: 'HEAD' })).status, 404)
  t.equal(await upload(url, digest, bytes), 201)
  t.equal((await fetch(`${url}/api/blobs/${digest}`, { method: 'HEAD' })).status, 200)
  t.equal(await upload(url, digest, bytes), 200, 'already there')
  const wrong = digestOf(Buffer.from('something else'))
  const res = await fetch(`${url}/api/blobs/${wrong}`, { method: 'POST', body: bytes })
  t.equal(res.status, 400)
  t.match(await res.json(), { error: /^digest mismatch, expected "sha256:[0-9a-f]{64}", got "sha256:[0-9a-f]{64}"$/ })
  t.equal((await fetch(`${url}/api/blobs/${wrong}`, { method: 'HEAD' })).status, 404, 'nothing kept of a mismatched upload')
  const blobDir = join(app.config.modelsDir, '.llamagate', 'blobs')
  t.same((await readdir(blobDir)).filter((n) => n.includes('.partial')), [], 'no half-written file left')
  for (const bad of ['sha256:xyz', 'md5:abc', 'sha256:' + 'A'.repeat(64)]) {
    const head = await fetch(`${url}/api/blobs/${bad}`, { method: 'POST', body: 'x' })
    t.equal(head.status, 400, `${bad}: 400`)
    t.match(await head.json(), { error: /invalid digest/ })
  }
})

t.test('create from uploaded files: a model that answers; its system prompt and parameters apply', async (t) => {
  const { app, url } = await serveTinyModels(t)
  const bytes = await readFile((await writeTinyGguf({ file: join(await tempDir(t), 'c.gguf'), seed: 4 })).file)
  const digest = digestOf(bytes)
  t.equal(await upload(url, digest, bytes), 201)
  const res = await post(`${url}/api/create`, { model: 'me/made', files: { 'made.gguf': digest }, system: 'You are terse.', parameters: { num_predict: 3, temperature: 0.1 } }, { accept: 'application/x-ndjson' })
  t.equal(res.status, 200)
  const statuses = (await res.text()).trim().split('\n').map((l) => (JSON.parse(l) as { status: string }).status)
  t.equal(statuses.at(-1), 'success')
  const record = app.store.get('me/made')
  t.equal(record.manifest.files[0]!.sha256, digest.slice(7), 'the blob, verified, is the model\'s file')
  const ollama = new Ollama({ host: url })
  const shown = await ollama.show({ model: 'me/made' })
  t.equal(shown.system, 'You are terse.')
  t.match(shown.parameters, /^num_predict\s+3$/m)
  const plain = await ollama.chat({ model: 'acme/tiny', messages: [{ role: 'user', content: 'hi' }], options: { num_predict: 3 } })
  const made = await ollama.chat({ model: 'me/made', messages: [{ role: 'user', content: 'hi' }] })
  t.equal(made.eval_count, 3, 'num_predict from the model\'s parameters')
  t.ok(made.prompt_eval_count > plain.prompt_eval_count, `the system prompt went first (${plain.prompt_eval_count} -> ${made.prompt_eval_count} prompt tokens)`)
  const own = await ollama.chat({ model: 'me/made', messages: [{ role: 'system', content: 'x' }, { role: 'user', content: 'hi' }], options: { num_predict: 5 } })
  t.equal(own.eval_count, 5, 'the request\'s options win over the model\'s')
  t.ok(own.prompt_eval_count < made.prompt_eval_count, 'a conversation with its own system prompt keeps it')
})

t.test('ollama.create from a local model: shares its files, adds a system prompt', async (t) => {
  const { app, url } = await serveTinyModels(t)
  const ollama = new Ollama({ host: url })
  const progress = await ollama.create({ model: 'me/terse', from: 'acme/tiny', system: 'Answer in one word.' })
  t.equal(progress.status, 'success')
  const made = app.store.get('me/terse')
  t.match(made.manifest.source, { type: 'create', model: 'acme/tiny', link: 'hardlink' })
  t.equal(made.system, 'Answer in one word.')
  const answer = await ollama.generate({ model: 'me/terse', prompt: 'hi', options: { num_predict: 2 } })
  t.equal(answer.eval_count, 2)
})

t.test('bad creates: 4xx with a message, nothing half-made listed', async (t) => {
  const { app, url } = await serveTinyModels(t)
  const notGguf = Buffer.from('not a gguf at all')
  t.equal(await upload(url, digestOf(notGguf), notGguf), 201)
  const missing = digestOf(Buffer.from('never uploaded'))
  const cases: Array<[string, Record<string, unknown>, number, RegExp]> = [
    ['unknown from', { model: 'me/x', from: 'acme/nope' }, 404, /model "acme\/nope" not found/],
    ['neither from nor files', { model: 'me/x' }, 400, /either "from".*or "files"/],
    ['both', { model: 'me/x', from: 'acme/tiny', files: { 'a.gguf': missing } }, 400, /not both/],
    ['a blob never uploaded', { model: 'me/x', files: { 'a.gguf': missing } }, 400, /was not uploaded: POST it to \/api\/blobs\/sha256:/],
    ['a bad digest', { model: 'me/x', files: { 'a.gguf': 'sha256:nope' } }, 400, /invalid digest/],
    ['a file name with a path', { model: 'me/x', files: { '../a.gguf': missing } }, 400, /not a GGUF file name/],
    ['a blob that is not a GGUF', { model: 'me/x', files: { 'a.gguf': digestOf(notGguf) } }, 422, /not a readable GGUF/],
    ['an invalid name', { model: 'nope', from: 'acme/tiny' }, 400, /invalid model name/],
    ['an Ollama (Go) template', { model: 'me/x', from: 'acme/tiny', template: '{{ if .System }}{{ .System }}{{ end }}{{ .Prompt }}' }, 400, /"template" is an Ollama \(Go\) template; .* Jinja/],
    ['a template over 64 KiB (llama-server could never start with it)', { model: 'me/x', from: 'acme/tiny', template: `{# ${'x'.repeat(200_000)} #}{{ messages[0].content }}` }, 400, /^"template" is 196 KiB: at most 64 KiB$/],
    ['adapters', { model: 'me/x', from: 'acme/tiny', adapters: { 'a.gguf': 'sha256:' + '0'.repeat(64) } }, 400, /"adapters" is not supported/],
    ['a bad parameter', { model: 'me/x', from: 'acme/tiny', parameters: { temperature: 'hot' } }, 400, /temperature/],
  ]
  for (const [what, body, status, message] of cases) {
    const res = await post(`${url}/api/create`, body)
    t.equal(res.status, status, `${what}: ${status}`)
    t.match(await res.json(), { error: message }, `${what}: says why`)
  }
  t.notOk(app.store.find('me/x'), 'nothing half-made listed')
  t.same(await readdir(app.config.modelsDir).then((owners) => owners.filter((o) => o === 'me')), [], 'and nothing half-made left on disk')
})

t.test('quantize: from a local model or an uploaded GGUF, through llama-quantize; progress streamed; no blob left', async (t) => {
  const { app, url } = await serveTinyModels(t)
  const ollama = new Ollama({ host: url })
  const done = await ollama.create({ model: 'me/q8', from: 'acme/tiny', quantize: 'q8_0', system: 'Be brief.' })
  t.equal(done.status, 'success')
  const q8 = app.store.get('me/q8')
  t.equal(ollamaDetails(q8).quantization_level, 'Q8_0', 'the GGUF says what it is')
  t.ok(q8.size < app.store.get('acme/tiny').size, `smaller than the f16 (${q8.size} < ${app.store.get('acme/tiny').size} bytes)`)
  t.equal(q8.system, 'Be brief.')
  const answer = await ollama.chat({ model: 'me/q8', messages: [{ role: 'user', content: 'hi' }], options: { num_predict: 3 } })
  t.equal(answer.eval_count, 3, 'the quantized model answers')

  const bytes = await readFile((await writeTinyGguf({ file: join(await tempDir(t), 'f16.gguf'), seed: 7 })).file)
  const digest = digestOf(bytes)
  t.equal(await upload(url, digest, bytes), 201)
  const res = await post(`${url}/api/create`, { model: 'me/q4', files: { 'f16.gguf': digest }, quantize: 'Q4_K_M' }, { accept: 'application/x-ndjson' })
  t.equal(res.status, 200)
  const statuses = (await res.text()).trim().split('\n').map((l) => (JSON.parse(l) as { status: string }).status)
  t.ok(statuses.includes('quantizing q4_k_m'), `progress: ${statuses.join(' | ')}`)
  t.equal(statuses.at(-1), 'success')
  t.equal(ollamaDetails(app.store.get('me/q4')).quantization_level, 'Q4_K_M', 'listed with its type (llama-quantize records the type asked for, whatever rows it had to fall back on)')
  const blobs = await readdir(join(app.config.modelsDir, '.llamagate', 'blobs'))
  t.same(blobs.filter((n) => n !== `sha256-${digest.slice(7)}`), [], 'only the uploaded blob stays: nothing made for the quantization is left')

  const bad: Array<[string, Record<string, unknown>, RegExp]> = [
    ['an unknown type', { model: 'me/x', from: 'acme/tiny', quantize: 'q9_z' }, /unknown dtype "q9_z"/],
    ['both from and files', { model: 'me/x', from: 'acme/tiny', files: { 'f16.gguf': digest }, quantize: 'q8_0' }, /not both/],
    ['a blob never uploaded', { model: 'me/x', files: { 'a.gguf': digestOf(Buffer.from('no')) }, quantize: 'q8_0' }, /was not uploaded/],
  ]
  for (const [what, body, message] of bad) {
    const r = await post(`${url}/api/create`, body)
    t.equal(r.status, 400, `${what}: 400`)
    t.match(await r.json(), { error: message }, `${what}: says why`)
  }
  t.notOk(app.store.find('me/x'))
})

t.test('template: a Jinja chat template of the model\'s own, used instead of the GGUF\'s (show and capabilities follow it)', async (t) => {
  const { url } = await serveRealisticModels(t, { 'acme/qwen': 'qwen25' })
  const ollama = new Ollama({ host: url })
  const bare = "{% for message in messages %}{{ message['content'] }}\n{% endfor %}"
  t.equal((await ollama.create({ model: 'me/bare', from: 'acme/qwen', template: bare })).status, 'success')
  const shown = await ollama.show({ model: 'me/bare' })
  t.equal(shown.template, bare)
  t.same(shown.capabilities, ['completion'], 'no tools in this template')
  const messages = [{ role: 'user', content: 'What is the weather in Paris today?' }]
  const qwen = await ollama.chat({ model: 'acme/qwen', messages, options: { num_predict: 1 } })
  const mine = await ollama.chat({ model: 'me/bare', messages, options: { num_predict: 1 } })
  t.ok(mine.prompt_eval_count < qwen.prompt_eval_count - 5, `llama-server rendered the new template: ${qwen.prompt_eval_count} -> ${mine.prompt_eval_count} prompt tokens (no system block, no role markers)`)
})
