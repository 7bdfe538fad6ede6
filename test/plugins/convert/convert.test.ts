import { randomUUID } from 'node:crypto'
import { readdir, readFile, truncate, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { ConversionError } from '../../../core/errors.js'
import { Converter } from '../../../plugins/convert/converter.js'
import { writeTinySafetensors } from '../../../scripts/tiny-model.js'
import { tempDir } from '../../helpers/app.js'
import { FakeHub } from '../../helpers/fake-hub.js'
import { post, serveTinyModels } from '../../helpers/inference.js'
import { cpuRuntime } from '../../helpers/runtime.js'
import { processesWithMark } from '../../helpers/serve-process.js'

async function converter (t: Test, overrides: Partial<ConstructorParameters<typeof Converter>[0]> = {}): Promise<Converter> {
  const runtime = await cpuRuntime()
  return new Converter({ python: null, llamaCppSrc: null, dataDir: join(runtime.binDir, '..', '..', '..', '..'), quantizePath: runtime.quantizePath, timeoutMs: 120_000, ...overrides })
}

async function checkpoint (t: Test): Promise<string> {
  const dir = await tempDir(t)
  await writeTinySafetensors({ dir })
  return dir
}

async function leftovers (dir: string): Promise<string[]> {
  return (await readdir(dir)).filter((f) => f.includes('.tmp-') || f.endsWith('.gguf'))
}

const ready = await (await converter(t)).readiness()
if (!ready.ready) {
  // Loud, with what to install: CI installs these, so CI never skips here.
  t.comment(`SafeTensors conversion tests SKIPPED: ${ready.problems.join('; ')}. To run them: ${ready.fix}`)
}
const skip = ready.ready ? false : `converter not ready: ${ready.fix}`

t.test('pull a SafeTensors model: converted to f16, listed with its variant, and it chats', { skip }, async (t) => {
  const dir = await checkpoint(t)
  const hub = await FakeHub.start()
  t.teardown(() => hub.close())
  const files = await readdir(dir)
  hub.addRepo('acme/tiny-hf', { files: await Promise.all(files.map(async (f) => ({ path: f, content: await readFile(join(dir, f)), lfs: f.endsWith('.safetensors') || f === 'tokenizer.model' }))) })
  const { app, url } = await serveTinyModels(t, [], { hub: { endpoint: hub.url } })
  const res = await fetch(`${url}/api/pull`, { method: 'POST', headers: { accept: 'application/x-ndjson' }, body: JSON.stringify({ model: 'acme/tiny-hf' }) })
  const events = (await res.text()).split('\n').filter(Boolean).map((l) => JSON.parse(l))
  const statuses = events.map((e) => e.status)
  t.ok(statuses.includes('converting to gguf (f16)'), 'the conversion is reported')
  t.same(events.at(-1), { status: 'success' })
  const record = app.store.get('acme/tiny-hf')
  t.equal(record.format, 'safetensors')
  t.same(record.manifest.variants.map((v) => v.dtype), ['f16'])
  const tags = (await (await fetch(`${url}/api/tags`)).json()) as any
  t.equal(tags.models[0].format, 'safetensors')
  const chat = await post(`${url}/api/chat`, { model: 'acme/tiny-hf', stream: false, messages: [{ role: 'user', content: 'hi' }], options: { max_tokens: 4 } })
  t.equal(chat.status, 200)
  t.equal((await chat.json() as any).eval_count, 4)

  const q8 = await post(`${url}/api/chat`, { model: 'acme/tiny-hf', stream: false, messages: [{ role: 'user', content: 'hi' }], options: { max_tokens: 3, dtype: 'q8_0' } })
  t.equal(q8.status, 200, 'a request for q8_0 makes and uses a second variant')
  if (q8.status !== 200) t.comment(await q8.text())
  const q4 = await post(`${url}/api/chat`, { model: 'acme/tiny-hf', stream: false, messages: [{ role: 'user', content: 'hi' }], options: { max_tokens: 3, dtype: 'q4_k_m' } })
  t.equal(q4.status, 200, 'q4_k_m goes through llama-quantize')
  const variants = app.store.get('acme/tiny-hf').manifest.variants
  t.same(variants.map((v) => v.dtype).sort(), ['f16', 'q4_k_m', 'q8_0'])
  const q4size = variants.find((v) => v.dtype === 'q4_k_m')!.size
  const f16size = variants.find((v) => v.dtype === 'f16')!.size
  t.ok(q4size < f16size, `the q4_k_m file is smaller (${q4size} < ${f16size})`)
})

t.test('conversion failures: a clear error, no partial file, no process left', { skip }, async (t) => {
  const conv = await converter(t)
  const unsupported = await checkpoint(t)
  const config = JSON.parse(await readFile(join(unsupported, 'config.json'), 'utf8'))
  await writeFile(join(unsupported, 'config.json'), JSON.stringify({ ...config, architectures: ['FrobnicatorForCausalLM'] }))
  const e1 = await t.rejects(conv.ensure(unsupported, 'f16'))
  t.type(e1, ConversionError)
  t.match((e1 as Error).message, /FrobnicatorForCausalLM.*not supported|not supported.*FrobnicatorForCausalLM/)
  t.same(await leftovers(unsupported), [])

  const noTokenizer = await checkpoint(t)
  const { rm } = await import('node:fs/promises')
  await rm(join(noTokenizer, 'tokenizer.model'))
  const e2 = await t.rejects(conv.ensure(noTokenizer, 'f16'))
  t.match((e2 as Error).message, /convert_hf_to_gguf\.py to f16 failed \(exit \d+\)/)
  t.same(await leftovers(noTokenizer), [])

  const truncated = await checkpoint(t)
  await truncate(join(truncated, 'model.safetensors'), 5000)
  const e3 = await t.rejects(conv.ensure(truncated, 'f16'))
  t.match((e3 as Error).message, /failed/)
  t.same(await leftovers(truncated), [])

  const hangs = join(await tempDir(t), 'python')
  await writeFile(hangs, '#!/bin/sh\ncase "$1" in -c) exec /usr/bin/python3 "$@";; esac\nsleep 60 &\nwait\n', { mode: 0o755 })
  const mark = randomUUID()
  process.env.LLAMAGATE_TEST_MARK = mark
  t.teardown(() => { delete process.env.LLAMAGATE_TEST_MARK })
  const slow = await converter(t, { python: hangs, timeoutMs: 1500 })
  const model = await checkpoint(t)
  const e4 = await t.rejects(slow.ensure(model, 'f16'))
  t.match((e4 as Error).message, /ran past the time limit \(conversion\.timeout 2 s\) and was stopped/)
  t.same(await leftovers(model), [])
  await new Promise((r) => setTimeout(r, 200))
  t.same((await processesWithMark(mark)).filter((p) => p !== process.pid), [], 'the hung tool and its children are gone')

  const missing = await converter(t, { python: '/nonexistent/python3' })
  const e5 = await t.rejects(missing.ensure(model, 'f16'))
  t.equal((e5 as ConversionError).statusCode, 503)
  t.match((e5 as Error).message, /SafeTensors conversion is not available: \/nonexistent\/python3 did not run.*apt-get install python3-numpy python3-torch/)
})
