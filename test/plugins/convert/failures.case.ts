// Conversions that fail: each gives a clear error (with the tool's own words where the tool failed), leaves
// no partial file and no process, and leaves the checkpoint convertible for a later try.
import { readdir, readFile, rm, truncate, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { ConversionError } from '../../../core/base/errors.js'
import { writeTinyGguf } from '../../../scripts/fixtures/tiny-model.js'
import { tempDir } from '../../helpers/app.js'
import { checkpoint, fakePython, leftovers, markProcesses, realConverter, sharedConverter, skipUnlessReady } from './fixtures.js'

const skip = skipUnlessReady(t, await (await sharedConverter()).readiness())

async function failure (t: Test, run: Promise<unknown>): Promise<ConversionError> {
  const err = await t.rejects(run) as ConversionError
  t.type(err, ConversionError)
  return err
}

t.test('an unsupported architecture: the converter\'s own words, 422; fixed, the same folder converts', { skip }, async (t) => {
  const conv = await sharedConverter()
  const dir = await checkpoint(t)
  const config = JSON.parse(await readFile(join(dir, 'config.json'), 'utf8'))
  await writeFile(join(dir, 'config.json'), JSON.stringify({ ...config, architectures: ['FrobnicatorForCausalLM'] }))
  const before = await readdir(dir)
  const err = await failure(t, conv.ensureVariant({ modelDir: dir, dtype: 'f16' }))
  t.equal(err.statusCode, 422)
  t.equal(err.code, 'conversion_failed')
  t.equal(err.message, 'convert_hf_to_gguf.py (f16) failed (exit 1): Model FrobnicatorForCausalLM is not supported')
  t.ok(err.toolTail.length > 0, 'the tool\'s last lines travel with the error (for the log)')
  t.same(await readdir(dir), before, 'nothing added to the folder, nothing removed')

  await writeFile(join(dir, 'config.json'), JSON.stringify(config))
  const made = await conv.ensureVariant({ modelDir: dir, dtype: 'f16' })
  t.equal(made.file, join(dir, 'model-f16.gguf'), 'a later try works')
})

t.test('a BPE tokenizer.json without transformers: the tool fails and says what it needs', { skip }, async (t) => {
  const conv = await sharedConverter()
  const readiness = await conv.readiness()
  const dir = await checkpoint(t)
  // Passes the checks before the tool (there is a tokenizer file) but has no SentencePiece model.
  await rm(join(dir, 'tokenizer.model'))
  await writeFile(join(dir, 'tokenizer.json'), '{"version": "1.0", "model": {"type": "BPE", "vocab": {}, "merges": []}}')
  const err = await failure(t, conv.ensureVariant({ modelDir: dir, dtype: 'f16' }))
  t.equal(err.statusCode, 422)
  t.match(err.message, /^convert_hf_to_gguf\.py \(f16\) failed \(exit 1\): /)
  if (readiness.papered.includes('transformers')) {
    t.match(err.message, 'transformers is not installed (llamagate converter shim)', 'the shim names itself')
  }
  t.same(await leftovers(dir), [])
})

t.test('a missing tokenizer and truncated weights are refused before the tool runs', { skip }, async (t) => {
  const survivors = markProcesses(t)
  const log = join(await tempDir(t), 'runs.log')
  const counting = await fakePython(t, `echo run >> ${log}\nexec /usr/bin/python3 "$@"`)
  const conv = await realConverter(t, { python: counting })

  const noTokenizer = await checkpoint(t)
  await rm(join(noTokenizer, 'tokenizer.model'))
  const e1 = await failure(t, conv.ensureVariant({ modelDir: noTokenizer, dtype: 'f16' }))
  t.equal(e1.statusCode, 422)
  t.match(e1.message, 'it has no tokenizer (tokenizer.model, tokenizer.json or vocab.json)')
  t.same(await leftovers(noTokenizer), [])

  const truncated = await checkpoint(t)
  await truncate(join(truncated, 'model.safetensors'), 5000)
  const e2 = await failure(t, conv.ensureVariant({ modelDir: truncated, dtype: 'q4_k_m' }))
  t.equal(e2.statusCode, 422)
  t.match(e2.message, /model\.safetensors is truncated \(5000 of \d+ bytes\); pull the model again/)
  t.same(await leftovers(truncated), [])
  await t.rejects(readFile(log), { code: 'ENOENT' }, 'the converter never ran')
  t.same(await survivors(), [])
})

t.test('a hung converter: stopped at the time limit with its whole process group; no partial file', { skip }, async (t) => {
  const survivors = markProcesses(t)
  const hangs = await fakePython(t, 'echo partial > "$OUT"\nsleep 60 &\nwait')
  const conv = await realConverter(t, { python: hangs, timeoutMs: 1500 })
  const dir = await checkpoint(t)
  const started = Date.now()
  const err = await failure(t, conv.ensureVariant({ modelDir: dir, dtype: 'f16' }))
  // The tool sleeps 60 s: 30 s leaves a loaded machine room and still tells the limit from the sleep's end.
  t.ok(Date.now() - started < 30_000, `stopped at the limit, not at the end of the sleep (${Date.now() - started} ms)`)
  t.equal(err.statusCode, 500)
  t.equal(err.code, 'conversion_timeout')
  t.equal(err.message, 'convert_hf_to_gguf.py (f16) ran past the time limit (conversion.timeout, 1.5 s) and was stopped')
  t.same(await leftovers(dir), [], 'the partial output is gone')
  t.same(await survivors(), [], 'the tool and its child (sleep) are gone')
})

t.test('a tool that dies half-way, or exits 0 with a broken file: nothing is kept', { skip }, async (t) => {
  const dir = await checkpoint(t)
  const dies = await fakePython(t, 'echo "GGUF half" > "$OUT"\necho "ERROR:hf-to-gguf:out of memory while writing" >&2\nexit 1')
  const e1 = await failure(t, (await realConverter(t, { python: dies })).ensureVariant({ modelDir: dir, dtype: 'f16' }))
  t.equal(e1.message, 'convert_hf_to_gguf.py (f16) failed (exit 1): out of memory while writing')
  t.same(await leftovers(dir), [])

  const lies = await fakePython(t, 'head -c 4096 /dev/urandom > "$OUT"\nexit 0')
  const e2 = await failure(t, (await realConverter(t, { python: lies })).ensureVariant({ modelDir: dir, dtype: 'bf16' }))
  t.equal(e2.statusCode, 500)
  t.match(e2.message, /^the bf16 output is not a valid GGUF \(.+\); nothing was kept$/)
  t.same(await leftovers(dir), [])
})

t.test('llama-quantize failing: its words, no partial file; the f16 it started from stays', { skip }, async (t) => {
  const dir = await checkpoint(t)
  const quantize = join(dir, 'fake-quantize')
  await writeFile(quantize, '#!/bin/sh\necho "GGUF" > "$2"\necho "main: build = 1"\necho "llama_model_quantize: failed to quantize: unsupported tensor type" >&2\nexit 1\n', { mode: 0o755 })
  // The f16 step is not what fails here: a stand-in writes a valid f16 GGUF of the tiny Llama.
  const { file: f16 } = await writeTinyGguf({ file: join(await tempDir(t), 'f16.gguf'), dtype: 'f16' })
  const conv = await realConverter(t, { quantizePath: quantize, python: await fakePython(t, `cp ${f16} "$OUT"`) })
  const err = await failure(t, conv.ensureVariant({ modelDir: dir, dtype: 'q5_k_m' }))
  t.equal(err.statusCode, 422)
  t.equal(err.message, 'llama-quantize (q5_k_m) failed (exit 1): llama_model_quantize: failed to quantize: unsupported tensor type')
  t.same(await leftovers(dir), ['model-f16.gguf'], 'only the (valid) f16 remains')
})

t.test('a missing interpreter: 503 with what to install; no file', { skip }, async (t) => {
  const dir = await checkpoint(t)
  const err = await failure(t, (await realConverter(t, { python: '/nonexistent/python3' })).ensureVariant({ modelDir: dir, dtype: 'f16' }))
  t.equal(err.statusCode, 503)
  t.match(err.message, /\/nonexistent\/python3: not found\. To fix: npm run setup:converter; or by hand: on Debian\/Ubuntu, apt-get install -y --no-install-recommends python3-numpy python3-torch python3-sentencepiece python3-tqdm python3-yaml/)
  t.same(await leftovers(dir), [])
})
