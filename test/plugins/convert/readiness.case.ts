// Readiness, refusals that need no conversion, and the checks made before the converter runs. No test here
// converts anything: they pass on a machine without the Python packages too (except where they say).
import { open, readFile, rm, truncate, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { BadRequestError, ConversionError } from '../../../core/base/errors.js'
import { checkCheckpoint } from '../../../plugins/convert/checkpoint-check.js'
import { reasonOf } from '../../../plugins/convert/converter.js'
import { DEBIAN_PACKAGES } from '../../../plugins/convert/python-env.js'
import { progressParser } from '../../../plugins/convert/tool-progress.js'
import { build, tempDir } from '../../helpers/app.js'
import { usualMs, withinUsualTime } from '../../helpers/usual-time.js'
import { checkpoint, fakePython, realConverter, runtimeSource, sharedConverter, skipUnlessReady } from './fixtures.js'

t.test('a missing interpreter: not ready, with the apt command, and a conversion answers 503 saying so', async (t) => {
  const conv = await realConverter(t, { python: '/nonexistent/python3' })
  const r = await conv.readiness()
  t.equal(r.ready, false)
  t.equal(r.python, null)
  t.match(r.problems.join('\n'), '/nonexistent/python3: not found')
  t.match(r.fix, `apt-get install -y --no-install-recommends ${DEBIAN_PACKAGES.join(' ')}`)
  t.match(r.fix, 'requirements-convert_hf_to_gguf.txt')
  const model = await checkpoint(t)
  const err = await t.rejects(conv.convert({ modelDir: model, dtype: 'f16' })) as ConversionError
  t.type(err, ConversionError)
  t.equal(err.statusCode, 503)
  t.equal(err.code, 'converter_unavailable')
  t.match(err.message, /SafeTensors conversion is not available here: \/nonexistent\/python3: not found\. To fix: .*apt-get install/)
})

t.test('an interpreter without the packages names the module it lacks', async (t) => {
  // -S: no site-packages, so not even numpy: what a bare python3 (pyenv, python.org) looks like.
  const bare = join(await tempDir(t), 'python')
  await writeFile(bare, '#!/bin/sh\nexec /usr/bin/python3 -S "$@"\n', { mode: 0o755 })
  const r = await (await realConverter(t, { python: bare })).readiness()
  t.equal(r.ready, false)
  t.match(r.problems.join('\n'), new RegExp(`${bare} lacks the Python module (numpy|torch)`))
})

t.test('no llama.cpp source tree: not ready, and says where one comes from', async (t) => {
  const r = await (await realConverter(t, { llamaCppSrc: await tempDir(t) })).readiness()
  t.equal(r.ready, false)
  t.match(r.problems.join('\n'), 'has no convert_hf_to_gguf.py')
})

t.test('the real interpreter on this machine', async (t) => {
  const conv = await sharedConverter()
  const r = await conv.readiness()
  if (skipUnlessReady(t, r)) return // a failure where the converter is required (CI), else a skip saying why
  t.equal(r.problems.length, 0, r.problems.join('; '))
  t.equal(r.fix, null)
  t.equal(r.shim, r.papered.length > 0, 'the shim is used exactly when something is papered over')
  // Debian 12's packages: torch 1.13 and no transformers. With the real requirements nothing is papered.
  if (r.shim) t.ok(r.papered.every((p) => p === 'transformers' || p.startsWith('torch.')), `papered over: ${r.papered.join(', ')}`)
  const started = performance.now()
  const again = await conv.readiness()
  t.same(again, r, 'a ready result is remembered')
  // A check that imports torch again makes a new answer; the remembered one is the very object it gave before
  // (told by identity, not by time: a busy machine slows both).
  t.equal(again, r, 'and answered without importing torch again: the same answer, not a new check\'s')
  t.comment(`the remembered answer came in ${Math.round(performance.now() - started)} ms`)
})

t.test('no llama-quantize: f16 and q8_0 only; other types answer 503 before anything runs', async (t) => {
  // A stand-in interpreter (it passes the probe as the real one does): no Python runs here.
  const conv = await realConverter(t, { quantizePath: null, python: await fakePython(t, 'exit 1') })
  const r = await conv.readiness()
  t.match(r.problems.join('\n'), 'no llama-quantize')
  const model = await checkpoint(t)
  const err = await t.rejects(conv.convert({ modelDir: model, dtype: 'q4_k_m' })) as ConversionError
  t.equal(err.statusCode, 503)
  t.match(err.message, 'making q4_k_m needs llama-quantize')
})

t.test('an unknown dtype is refused with the list of known ones', async (t) => {
  const conv = await realConverter(t)
  const err = await t.rejects(conv.ensureVariant({ modelDir: '/nowhere', dtype: 'q3_z' }))
  t.type(err, BadRequestError)
  t.match((err as Error).message, /unknown dtype "q3_z": expected one of f32, f16, bf16, q8_0, q4_0/)
})

t.test('checkpoint checks: each mistake gets a plain sentence before any tool runs', async (t) => {
  const cases: Array<[string, (dir: string) => Promise<void>, RegExp]> = [
    ['no folder', async (dir) => { await rm(dir, { recursive: true }) }, /no such folder/],
    ['no config.json', async (dir) => { await rm(join(dir, 'config.json')) }, /it has no config\.json/],
    ['config.json not JSON', async (dir) => { await writeFile(join(dir, 'config.json'), '{"architectures": [') }, /config\.json is not valid JSON/],
    ['no architectures', async (dir) => { await writeFile(join(dir, 'config.json'), '{"model_type": "llama"}') }, /config\.json names no "architectures"/],
    ['no weights', async (dir) => { await rm(join(dir, 'model.safetensors')) }, /no \*\.safetensors weights/],
    ['truncated weights', async (dir) => { await truncate(join(dir, 'model.safetensors'), 5000) }, /model\.safetensors is truncated \(5000 of \d+ bytes\); pull the model again/],
    ['cut inside the header', async (dir) => { await truncate(join(dir, 'model.safetensors'), 100) }, /model\.safetensors is not a whole safetensors file/],
    ['damaged header', async (dir) => {
      const handle = await open(join(dir, 'model.safetensors'), 'r+')
      await handle.write('#', 8)
      await handle.close()
    }, /model\.safetensors has a damaged safetensors header/],
    ['no tokenizer', async (dir) => { await rm(join(dir, 'tokenizer.model')) }, /it has no tokenizer \(tokenizer\.model, tokenizer\.json or vocab\.json\)/],
  ]
  for (const [name, spoil, message] of cases) {
    const dir = await checkpoint(t)
    await spoil(dir)
    const err = await t.rejects(checkCheckpoint(dir), name) as ConversionError
    t.equal(err.statusCode, 422, `${name}: 422`)
    t.match(err.message, message, name)
  }
  await t.resolves(checkCheckpoint(await checkpoint(t)), 'the fixture itself passes')
})

t.test('the tool\'s own reason is picked from its output', async (t) => {
  t.equal(reasonOf(['INFO:hf-to-gguf:Loading model: a', 'ERROR:hf-to-gguf:Model FrobnicatorForCausalLM is not supported']), 'Model FrobnicatorForCausalLM is not supported')
  t.equal(reasonOf(['Traceback (most recent call last):', '  File "x.py", line 3', 'ValueError: mmap length is greater than file size', 'Writing:   0%|  | 0.00/309k']), 'ValueError: mmap length is greater than file size')
  t.equal(reasonOf(['main: build = 1', 'llama_model_quantize: failed to quantize: ============ Please use an importance matrix']), 'llama_model_quantize: failed to quantize: ============ Please use an importance matrix')
  t.equal(reasonOf(['a', 'b', 'c', 'd']), 'b | c | d')
  t.equal(reasonOf([]), 'no output')
})

t.test('progress lines: tqdm percentages and llama-quantize tensor counts, each figure once', async (t) => {
  const seen: unknown[] = []
  const parse = progressParser('converting to gguf (f16)', (p) => seen.push(p))
  for (const line of ['INFO:hf-to-gguf:Loading', 'Writing:   0%|          | 0.00/309k', 'Writing:   0%|          | 0.00/309k', 'Writing: 100%|██████████| 309k/309k']) parse(line)
  t.same(seen, [{ status: 'converting to gguf (f16)', completed: 0, total: 100 }, { status: 'converting to gguf (f16)', completed: 100, total: 100 }])
  seen.length = 0
  const quant = progressParser('quantizing q4_k_m', (p) => seen.push(p))
  quant('[   3/  21] blk.0.attn_k.weight - [ 64, 64, 1, 1], type = f16, converting to q5_0 .. size = 0.01 MiB')
  t.same(seen, [{ status: 'quantizing q4_k_m', completed: 3, total: 21 }])
})

t.test('GET /api/convert/status answers readiness', async (t) => {
  const app = await build(t, { conversion: { python: '/nonexistent/python3' }, llama_cpp_src: await runtimeSource() })
  const res = await app.inject({ method: 'GET', url: '/api/convert/status' })
  t.equal(res.statusCode, 200)
  const body = res.json()
  t.equal(body.ready, false)
  t.equal(body.python, null)
  t.match(body.fix, 'apt-get install')
  t.match(body.problems, ['/nonexistent/python3: not found'])

  const missingTree = await build(t, { llama_cpp_src: await tempDir(t) })
  const second = (await missingTree.inject({ method: 'GET', url: '/api/convert/status' })).json()
  t.equal(second.ready, false)
  t.match(second.problems[0], /has no convert_hf_to_gguf\.py \(llama_cpp_src must name a llama\.cpp source tree\)/)
})

t.test('GET /api/convert/status: callers share one check, and a change is seen; 20 at once start one Python', async (t) => {
  const dir = await tempDir(t)
  const starts = join(dir, 'starts')
  // An interpreter whose probe says ready after a moment, and notes each start: what the status costs is counted.
  const python = join(dir, 'python3')
  const probe = JSON.stringify({ ok: true, papered: [], python: '3', torch: '2', numpy: '1' })
  const script = (note: string): string => `#!/bin/sh\necho ${note} >> ${starts}\nsleep 0.3\necho '${probe}'\n`
  await writeFile(python, script('first'), { mode: 0o755 })
  const app = await build(t, { conversion: { python }, llama_cpp_src: await runtimeSource() })
  const count = async (): Promise<number> => (await readFile(starts, 'utf8').catch(() => '')).split('\n').filter(Boolean).length

  const tags = async (): Promise<{ status: number, ms: number }> => {
    const started = performance.now()
    const res = await app.inject({ method: 'GET', url: '/api/tags' })
    return { status: res.statusCode, ms: performance.now() - started }
  }
  const usual = await usualMs(tags)
  const [normal, ...answers] = await Promise.all([tags(), ...Array.from({ length: 20 }, () => app.inject({ method: 'GET', url: '/api/convert/status' }))])
  t.equal(normal!.status, 200, 'a normal request among them is answered')
  withinUsualTime(t, 'the normal request', normal!.ms, usual)
  t.same(answers.map((a) => [a.statusCode, a.json().python]), answers.map(() => [200, python]), 'all 20 answered, ready')
  t.equal(await count(), 1, 'one Python for 20 callers at once')
  for (let i = 0; i < 10; i++) await app.inject({ method: 'GET', url: '/api/convert/status' })
  t.equal(await count(), 1, 'and none for the 10 after')

  // Another interpreter in its place (what installing one does): the next status checks again.
  await rm(python)
  await writeFile(python, script('second'), { mode: 0o755 })
  t.equal((await app.inject({ method: 'GET', url: '/api/convert/status' })).json().ready, true)
  t.equal(await count(), 2, 'the changed interpreter is checked')
})

t.test('a fake interpreter that passes the probe is accepted (the failure tests rely on it)', async (t) => {
  const fake = await fakePython(t, 'exit 0')
  const r = await (await realConverter(t, { python: fake })).readiness()
  if (skipUnlessReady(t, r)) return // a failure where the converter is required (CI), else a skip saying why
  t.equal(r.python, fake)
  t.equal(JSON.parse(await readFile(join(await checkpoint(t), 'config.json'), 'utf8')).architectures[0], 'LlamaForCausalLM', 'the fixture is a Llama')
})
