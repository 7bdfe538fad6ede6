// The converter service with the real tools: llama.cpp's convert_hf_to_gguf.py and llama-quantize, and the
// real llama-server loading what they made. Skipped, loudly, where the Python packages are missing; a failure
// instead where LLAMAGATE_REQUIRE_CONVERTER=1 (CI).
import { createHash } from 'node:crypto'
import { existsSync } from 'node:fs'
import { readFile, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { gguf } from '@huggingface/gguf'
import t, { type Test } from 'tap'
import type { ConversionError } from '../../../core/base/errors.js'
import type { ConvertProgress, MadeVariant } from '../../../plugins/convert/converter.js'
import { LlamaServer } from '../../../runtimes/index.js'
import { tempDir } from '../../helpers/app.js'
import { once } from '../../helpers/once.js'
import { cpuRuntime } from '../../helpers/runtime.js'
import { until } from '../../helpers/until.js'
import { checkpoint, fakePython, leftovers, markProcesses, realConverter, sharedConverter, skipUnlessReady } from './fixtures.js'

const skip = skipUnlessReady(t, await (await sharedConverter()).readiness())

// llama.cpp's LLAMA_FTYPE numbers, as written in general.file_type.
const FILE_TYPE: Record<string, number> = { f16: 1, q8_0: 7, q4_k_m: 15, q6_k: 18 }

async function checkGguf (t: Test, made: MadeVariant, dtype: string): Promise<void> {
  t.equal(made.dtype, dtype)
  t.equal(made.file.split('/').at(-1), `model-${dtype}.gguf`)
  t.equal(made.size, (await stat(made.file)).size, 'size is the file\'s')
  t.equal(made.sha256, createHash('sha256').update(await readFile(made.file)).digest('hex'), 'sha256 is the file\'s')
  const metadata = (await gguf(made.file, { allowLocalFile: true })).metadata as Record<string, unknown>
  t.equal(metadata['general.architecture'], 'llama')
  t.equal(metadata['general.file_type'], FILE_TYPE[dtype], `general.file_type is ${dtype}'s`)
}

/** Loads the GGUF in the real llama-server and asks for one completion of `n` tokens. */
async function completes (t: Test, file: string, n = 4): Promise<void> {
  const server = new LlamaServer({ build: await cpuRuntime(), modelPath: file, alias: 'acme/converted', ctxSize: 256, parallel: 1, threads: 1 })
  t.teardown(() => server.stop())
  await server.start()
  const res = await fetch(`${server.endpoint.address.baseUrl}/completion`, { method: 'POST', body: JSON.stringify({ prompt: 'hello', n_predict: n, ignore_eos: true }) })
  t.equal(res.status, 200)
  t.equal(((await res.json()) as { tokens_predicted: number }).tokens_predicted, n, `llama-server loaded ${file.split('/').at(-1)} and generated ${n} tokens`)
  await server.stop()
}

function timed<T> (label: string, work: () => Promise<T>): Promise<T> {
  const started = performance.now()
  return work().finally(() => t.comment(`${label}: ${Math.round(performance.now() - started)} ms`))
}

/**
 * The real converter's f16 of a fresh checkpoint, made once: the first test checks it, and the tests about
 * how runs are shared give out copies of it from a stand-in tool (they are not about the tool itself).
 */
const f16Run = once(async () => {
  const dir = await checkpoint(t)
  const events: ConvertProgress[] = []
  const made = await timed('f16 conversion', async () => (await sharedConverter()).convert({ modelDir: dir, dtype: 'f16', onProgress: (e) => events.push(e) }))
  return { dir, made, events }
})

/** A stand-in tool that writes the real f16 after `before` (sh), saying 100 % as the converter does. */
async function copiesF16 (t: Test, before: string): Promise<string> {
  const { made } = await f16Run()
  return fakePython(t, `${before}\necho 'Writing: 100%|##########| 309k/309k' >&2\ncp ${made.file} "$OUT"`)
}

t.test('f16: one converter run; the GGUF loads in llama-server', { skip }, async (t) => {
  const { dir, made, events } = await f16Run()
  await checkGguf(t, made, 'f16')
  t.same(events[0], { status: 'converting to gguf (f16)' })
  t.same(events.at(-1), { status: 'converting to gguf (f16)', completed: 100, total: 100 }, 'the converter\'s own progress, to 100 %')
  t.notOk(events.some((e) => e.status.startsWith('quantizing')))
  t.same(await leftovers(dir), ['model-f16.gguf'], 'nothing else is left in the folder')
  await completes(t, made.file)
})

t.test('q8_0: made by the converter directly, no f16 on the way', { skip }, async (t) => {
  const conv = await sharedConverter()
  const dir = await checkpoint(t)
  const events: ConvertProgress[] = []
  const made = await timed('q8_0 conversion', () => conv.convert({ modelDir: dir, dtype: 'q8_0', onProgress: (e) => events.push(e) }))
  await checkGguf(t, made, 'q8_0')
  t.same([...new Set(events.map((e) => e.status))], ['converting to gguf (q8_0)'])
  t.same(await leftovers(dir), ['model-q8_0.gguf'])
  await completes(t, made.file)
})

t.test('q4_k_m: the f16 first, then llama-quantize; a second type reuses the f16', { skip }, async (t) => {
  const conv = await sharedConverter()
  const dir = await checkpoint(t)
  const events: ConvertProgress[] = []
  const made = await timed('q4_k_m (f16 conversion + llama-quantize)', () => conv.ensureVariant({ modelDir: dir, dtype: 'q4_k_m', onProgress: (e) => events.push(e) }))
  await checkGguf(t, made, 'q4_k_m')
  t.same([...new Set(events.map((e) => e.status))], ['converting to gguf (f16)', 'quantizing q4_k_m'])
  const quantizing = events.filter((e) => e.status === 'quantizing q4_k_m' && e.total !== undefined)
  t.ok(quantizing.length > 1, 'llama-quantize\'s per-tensor progress is passed on')
  const last = quantizing.at(-1)
  t.same(last, { status: 'quantizing q4_k_m', completed: last?.total, total: last?.total }, 'to the last tensor')
  const f16Size = (await stat(join(dir, 'model-f16.gguf'))).size
  t.ok(made.size < f16Size, `the q4_k_m file is smaller than the f16 (${made.size} < ${f16Size})`)
  t.same((await leftovers(dir)).sort(), ['model-f16.gguf', 'model-q4_k_m.gguf'])
  await completes(t, made.file)

  const again: ConvertProgress[] = []
  const q6 = await timed('q6_k from the existing f16 (llama-quantize only)', () => conv.ensureVariant({ modelDir: dir, dtype: 'q6_k', onProgress: (e) => again.push(e) }))
  await checkGguf(t, q6, 'q6_k')
  t.same([...new Set(again.map((e) => e.status))], ['quantizing q6_k'], 'the f16 is reused, not converted again')
})

t.test('concurrent callers share one conversion; a made variant is reused', { skip }, async (t) => {
  const log = join(await tempDir(t), 'runs.log')
  const counting = await copiesF16(t, `echo run >> ${log}`)
  const conv = await realConverter(t, { python: counting })
  const dir = await checkpoint(t)
  const heard = new Map<number, number>()
  const results = await Promise.all([0, 1, 2].map((i) => conv.ensureVariant({ modelDir: dir, dtype: 'f16', onProgress: () => { heard.set(i, (heard.get(i) ?? 0) + 1) } })))
  t.equal((await readFile(log, 'utf8')).trim().split('\n').length, 1, 'three callers, one converter run')
  t.equal(new Set(results.map((r) => r.sha256)).size, 1, 'all three got the same file')
  t.equal(heard.size, 3, 'each caller heard the progress')
  const reused = await conv.ensureVariant({ modelDir: dir, dtype: 'f16' })
  t.same(reused, results[0], 'an existing variant is reused')
  t.equal((await readFile(log, 'utf8')).trim().split('\n').length, 1, 'without running the converter again')
  t.same(await leftovers(dir), ['model-f16.gguf'])
})

t.test('one caller leaving does not stop the conversion for the others', { skip }, async (t) => {
  // The tool runs until the test lets it finish: the first caller leaves while it surely runs.
  const gate = await tempDir(t)
  const slow = await copiesF16(t, `touch ${gate}/started\nwhile [ ! -e ${gate}/go ]; do sleep 0.05; done`)
  const conv = await realConverter(t, { python: slow })
  const dir = await checkpoint(t)
  const leaving = new AbortController()
  const first = conv.ensureVariant({ modelDir: dir, dtype: 'f16', signal: leaving.signal })
  const second = conv.ensureVariant({ modelDir: dir, dtype: 'f16' })
  await until('the tool to start', () => existsSync(join(gate, 'started')))
  leaving.abort(new Error('client went away'))
  await t.rejects(first, { message: 'client went away' }, 'the one who left is answered at once')
  await writeFile(join(gate, 'go'), '')
  await checkGguf(t, await second, 'f16')
})

t.test('the last caller leaving kills the tool\'s whole process group and removes its partial output', { skip }, async (t) => {
  const survivors = markProcesses(t)
  const hangs = await fakePython(t, 'echo partial > "$OUT"\nsleep 60 &\nwait')
  const conv = await realConverter(t, { python: hangs })
  const dir = await checkpoint(t)
  const a = new AbortController()
  const b = new AbortController()
  // b's q4_k_m waits on the same f16 run: that run stops only when both have left.
  const runA = conv.ensureVariant({ modelDir: dir, dtype: 'f16', signal: a.signal })
  const runB = conv.ensureVariant({ modelDir: dir, dtype: 'q4_k_m', signal: b.signal })
  await until('the tool to start writing', async () => (await leftovers(dir)).length > 0)
  t.match(await leftovers(dir), [/^model-f16\.gguf\.tmp-/], 'the tool was writing')
  a.abort(new Error('a left'))
  await t.rejects(runA, { message: 'a left' })
  await new Promise((r) => setTimeout(r, 300))
  t.equal((await survivors()).length > 0, true, 'the tool still runs for b')
  b.abort(new Error('b left'))
  await t.rejects(runB, { message: 'b left' })
  await until('the partial file to be removed', async () => (await leftovers(dir)).length === 0)
  t.same(await leftovers(dir), [], 'no partial file')
  await until('the tool and its child to exit', async () => (await survivors()).length === 0)
  t.same(await survivors(), [], 'the tool and its child are gone')
  t.same(JSON.parse(await readFile(join(dir, 'config.json'), 'utf8')).architectures, ['LlamaForCausalLM'], 'the checkpoint is untouched')
})

t.test('close() stops running conversions, removes their output, and refuses new ones', { skip }, async (t) => {
  const survivors = markProcesses(t)
  const hangs = await fakePython(t, 'echo partial > "$OUT"\nsleep 60 &\nwait')
  const conv = await realConverter(t, { python: hangs })
  const dir = await checkpoint(t)
  const run = conv.ensureVariant({ modelDir: dir, dtype: 'f16' })
  await until('the tool to start writing', async () => (await leftovers(dir)).length > 0)
  await conv.close()
  const err = await t.rejects(run) as ConversionError
  t.equal(err.statusCode, 503)
  t.match(err.message, 'shutting down')
  t.same(await leftovers(dir), [], 'the partial output was removed before close() returned')
  t.same(await survivors(), [], 'no process left')
  await t.rejects(conv.ensureVariant({ modelDir: dir, dtype: 'f16' }), { message: /shutting down/ })
})

t.test('cancel(dir) (the model is being deleted) stops its conversions only', { skip }, async (t) => {
  const survivors = markProcesses(t)
  const hangs = await fakePython(t, 'echo partial > "$OUT"\nsleep 60 &\nwait')
  const conv = await realConverter(t, { python: hangs })
  const doomed = await checkpoint(t)
  const other = await checkpoint(t)
  const doomedRun = conv.ensureVariant({ modelDir: doomed, dtype: 'f16' })
  const otherRun = conv.ensureVariant({ modelDir: other, dtype: 'f16' })
  await until('both tools to start writing', async () => (await leftovers(doomed)).length > 0 && (await leftovers(other)).length > 0)
  await conv.cancel(doomed)
  const err = await t.rejects(doomedRun) as ConversionError
  t.equal(err.statusCode, 409)
  t.equal(err.message, 'the model was deleted during its conversion')
  t.same(await leftovers(doomed), [])
  t.match(await leftovers(other), [/\.tmp-/], 'the other model\'s conversion goes on')
  await conv.close()
  await t.rejects(otherRun)
  t.same(await survivors(), [])
})
