// End to end through the gateway: a SafeTensors repository pulled from the fake hub is converted at the end
// of the pull, listed with its variant, and served by the real llama-server; other dtypes are made on
// request. Skipped, loudly, where the Python packages are missing; a failure instead where
// LLAMAGATE_REQUIRE_CONVERTER=1 (CI).
import { readdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { FakeHub } from '../../helpers/fake-hub.js'
import { ndjsonEvents, post, serveTinyModels, type InferenceServer } from '../../helpers/inference.js'
import { cpuRuntime } from '../../helpers/runtime.js'
import { checkpoint, skipUnlessReady } from './fixtures.js'

// One fake hub and one gateway for the file (its converter checks the interpreter once): each test pulls a
// repository of its own.
const hub = await FakeHub.start()
t.teardown(() => hub.close())
const server = await serveTinyModels(t, [], { hub: { endpoint: hub.url } })
const skip = skipUnlessReady(t, await server.app.converter.readiness())

/** Serves the tiny SafeTensors checkpoint from the fake hub as `repo`, optionally spoiled first. */
async function addCheckpoint (t: Test, repo: string, spoil?: (dir: string) => Promise<void>): Promise<void> {
  const dir = await checkpoint(t)
  await spoil?.(dir)
  const files = await Promise.all((await readdir(dir)).map(async (f) => ({ path: f, content: await readFile(join(dir, f)), lfs: f.endsWith('.safetensors') || f === 'tokenizer.model' })))
  hub.addRepo(repo, { files })
}

async function pull (server: InferenceServer, body: object): Promise<Array<Record<string, unknown>>> {
  const res = await post(`${server.url}/api/pull`, body, { accept: 'application/x-ndjson' })
  return await ndjsonEvents(res) as Array<Record<string, unknown>>
}

async function chat (server: InferenceServer, model: string, options: object = {}): Promise<{ status: number, body: Record<string, unknown> }> {
  const res = await post(`${server.url}/api/chat`, { model, stream: false, messages: [{ role: 'user', content: 'hi' }], options: { max_tokens: 3, ...options } })
  return { status: res.status, body: await res.json() as Record<string, unknown> }
}

t.test('GET /api/convert/status on the whole gateway: ready, with the runtime\'s llama-quantize', { skip }, async (t) => {
  const status = await (await fetch(`${server.url}/api/convert/status`)).json() as Record<string, unknown>
  t.equal(status.ready, true)
  t.equal(status.quantize, join((await cpuRuntime()).binDir, 'llama-quantize'), 'the llama-quantize beside the test runtime\'s llama-server')
  t.same(status.problems, [])
})

t.test('pull a SafeTensors model: converted to f16, listed with its variant, and it chats; q8_0 and q4_k_m on request', { skip }, async (t) => {
  await addCheckpoint(t, 'acme/tiny-hf')
  const events = await pull(server, { model: 'acme/tiny-hf' })
  const statuses = events.map((e) => e.status)
  const converting = statuses.indexOf('converting to gguf (f16)')
  t.ok(converting > 0, 'the conversion is reported in the pull stream')
  t.ok(events.some((e) => e.status === 'converting to gguf (f16)' && e.completed === 100 && e.total === 100), 'with the converter\'s own progress')
  t.same(events.at(-1), { status: 'success' })
  const record = server.app.store.get('acme/tiny-hf')
  t.equal(record.format, 'safetensors')
  t.same(record.manifest.variants.map((v) => [v.dtype, v.file]), [['f16', 'model-f16.gguf']])
  const tags = await (await fetch(`${server.url}/api/tags`)).json() as { models: Array<{ name: string, details: { format: string } }> }
  t.equal(tags.models.find((m) => m.name.startsWith('acme/tiny-hf'))?.details.format, 'safetensors', '/api/tags lists it as SafeTensors')

  const f16 = await chat(server, 'acme/tiny-hf')
  t.equal(f16.status, 200, JSON.stringify(f16.body.error ?? ''))
  t.equal(f16.body.eval_count, 3, 'llama-server answers from the f16')

  const q8 = await chat(server, 'acme/tiny-hf', { dtype: 'q8_0' })
  t.equal(q8.status, 200, `a request for q8_0 makes and uses a second variant ${JSON.stringify(q8.body.error ?? '')}`)
  const q4 = await chat(server, 'acme/tiny-hf', { dtype: 'q4_k_m' })
  t.equal(q4.status, 200, `q4_k_m goes through llama-quantize ${JSON.stringify(q4.body.error ?? '')}`)
  const variants = server.app.store.get('acme/tiny-hf').manifest.variants
  t.same(variants.map((v) => v.dtype).sort(), ['f16', 'q4_k_m', 'q8_0'], 'three variants in the manifest')
  const size = (dtype: string): number => variants.find((v) => v.dtype === dtype)?.size ?? NaN
  t.ok(size('q4_k_m') < size('q8_0') && size('q8_0') < size('f16'), `sizes: q4_k_m ${size('q4_k_m')} < q8_0 ${size('q8_0')} < f16 ${size('f16')}`)
  t.ok(variants.every((v) => /^[0-9a-f]{64}$/.test(v.sha256 ?? '')), 'each with its SHA-256')
})

t.test('a pull with options.dtype q4_k_m records the f16 it starts from, too', { skip }, async (t) => {
  await addCheckpoint(t, 'acme/tiny-q4')
  const events = await pull(server, { model: 'acme/tiny-q4', options: { dtype: 'q4_k_m' } })
  const statuses = [...new Set(events.map((e) => e.status))]
  t.ok(statuses.indexOf('converting to gguf (f16)') < statuses.indexOf('quantizing q4_k_m'), 'f16 first, then llama-quantize')
  t.ok(events.some((e) => e.status === 'quantizing q4_k_m' && typeof e.total === 'number' && e.completed === e.total), 'llama-quantize\'s per-tensor progress')
  t.same(events.at(-1), { status: 'success' })
  t.same(server.app.store.get('acme/tiny-q4').manifest.variants.map((v) => v.dtype).sort(), ['f16', 'q4_k_m'])
})

t.test('a failed conversion ends the pull with the tool\'s words; the model stays listed and converts later', { skip }, async (t) => {
  await addCheckpoint(t, 'acme/frob', async (dir) => {
    const config = JSON.parse(await readFile(join(dir, 'config.json'), 'utf8'))
    await writeFile(join(dir, 'config.json'), JSON.stringify({ ...config, architectures: ['FrobnicatorForCausalLM'] }))
  })
  const events = await pull(server, { model: 'acme/frob' })
  t.ok(events.some((e) => e.status === 'converting to gguf (f16)'))
  t.same(events.at(-1), { error: 'convert_hf_to_gguf.py (f16) failed (exit 1): Model FrobnicatorForCausalLM is not supported' })
  const record = server.app.store.get('acme/frob')
  t.equal(record.format, 'safetensors', 'the SafeTensors model is listed')
  t.same(record.manifest.variants, [], 'with no variant')
  t.same((await readdir(record.dir)).filter((f) => f.includes('.gguf')), [], 'and no partial GGUF')

  const refused = await chat(server, 'acme/frob')
  t.equal(refused.status, 422, 'a chat tries again and answers with the same reason')
  t.equal(refused.body.error, 'convert_hf_to_gguf.py (f16) failed (exit 1): Model FrobnicatorForCausalLM is not supported')

  // Say a newer llama.cpp knows the architecture: here, the config is put right in place.
  const config = JSON.parse(await readFile(join(record.dir, 'config.json'), 'utf8'))
  await writeFile(join(record.dir, 'config.json'), JSON.stringify({ ...config, architectures: ['LlamaForCausalLM'] }))
  const later = await chat(server, 'acme/frob')
  t.equal(later.status, 200, 'a later try converts and answers')
  t.same(server.app.store.get('acme/frob').manifest.variants.map((v) => v.dtype), ['f16'])
})
