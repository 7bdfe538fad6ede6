import { spawn } from 'node:child_process'
import { once } from 'node:events'
import t from 'tap'
import { freePort } from '../../../runtimes/process/free-port.js'
import { realisticModel } from '../../helpers/realistic-models.js'
import { cpuRuntime } from '../../helpers/runtime.js'

// runtimes/build/patches/0005: a load no longer formats the vocabulary's arrays whole for the loader's metadata dump,
// which prints 40 characters of each, and reserves the BPE merges' map. What the dump prints and what the vocabulary
// holds stay as they were: the arrays' lines cut where they always were, every merge loaded.

t.test('the loader\'s metadata dump and the vocabulary, with the arrays formatted only as far as printed', async (t) => {
  const runtime = await cpuRuntime()
  const model = await realisticModel('qwen25')
  const port = await freePort()
  const child = spawn(runtime.serverPath, ['--model', model, '--host', '127.0.0.1', '--port', String(port), '--threads', '1', '--no-warmup', '--ctx-size', '256', '--verbose'], { stdio: ['ignore', 'pipe', 'pipe'] })
  t.teardown(() => { child.kill('SIGKILL') })
  let log = ''
  const listening = new Promise<void>((resolve, reject) => {
    const read = (chunk: Buffer): void => { log += chunk.toString(); if (/server is listening|listening on/.test(log)) resolve() }
    child.stdout.on('data', read)
    child.stderr.on('data', read)
    child.once('exit', (code) => reject(new Error(`llama-server exited (${String(code)}) before listening:\n${log.slice(-2000)}`)))
  })
  await listening
  child.kill('SIGTERM')
  await once(child, 'exit')
  const value = (key: string): string => {
    const line = log.split('\n').find((l) => l.includes('- kv') && l.includes(` ${key} `)) ?? ''
    return line.slice(line.indexOf(' = ') + 3)
  }
  // Qwen2's vocabulary from llama.cpp's models/ggml-vocab-qwen2.gguf: 151,936 tokens, 151,387 merges.
  t.equal(value('tokenizer.ggml.tokens'), '["!", "\\"", "#", "$", "%", "&", "\'", ...', 'the tokens\' line: the first elements, cut where it always was')
  t.equal(value('tokenizer.ggml.merges'), '["Ġ Ġ", "ĠĠ ĠĠ", "i n", "Ġ t",...', 'the merges\' line')
  for (const key of ['tokenizer.ggml.tokens', 'tokenizer.ggml.merges', 'tokenizer.ggml.token_type']) {
    t.equal(Buffer.byteLength(value(key)), 40, `${key}: 37 bytes of the array's text and "..." (${value(key)})`)
  }
  t.match(log, /n_merges += 151387\n/, 'every merge loaded into the map')
  t.match(log, /n_vocab += 151936\n/, 'every token')
})
