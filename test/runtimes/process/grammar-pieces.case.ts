import { spawn } from 'node:child_process'
import t from 'tap'
import { freePort } from '../../../runtimes/process/free-port.js'
import { realisticModel } from '../../helpers/realistic-models.js'
import { cpuRuntime } from '../../helpers/runtime.js'

// runtimes/build/patches/0006: a grammar decodes the vocabulary's pieces once (from the start of a character) instead
// of once per candidate of every sampled token, and decodes as before while a character is left open. A random model
// whose samples the grammar keeps rejecting, under a schema of multi-byte strings: "𝄞" (4 bytes) has no token of its
// own in Qwen2's vocabulary, so every answer goes through byte tokens that leave a character open.

const SCHEMA = {
  type: 'object',
  properties: { city: { enum: ['Zürich', '東京', 'Kraków'] }, sign: { const: '𝄞' } },
  required: ['city', 'sign'],
  additionalProperties: false,
}

t.test('a schema of multi-byte strings: every answer fits it and ends there, through byte tokens and whole ones', async (t) => {
  const runtime = await cpuRuntime()
  const model = await realisticModel('qwen25')
  const port = await freePort()
  const child = spawn(runtime.serverPath, ['--model', model, '--host', '127.0.0.1', '--port', String(port), '--threads', '1', '--no-warmup', '--ctx-size', '512'], { stdio: 'ignore' })
  t.teardown(() => { child.kill('SIGKILL') })
  const url = `http://127.0.0.1:${port}`
  const exited = new Promise<never>((_, reject) => child.once('exit', (code) => reject(new Error(`llama-server exited (${String(code)})`))))
  for (;;) {
    const status = await Promise.race([exited, fetch(`${url}/health`).then((r) => r.status, () => 0)])
    if (status === 200) break
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 20))])
  }
  const cities = new Set<string>()
  for (const seed of [1, 2, 3, 4, 5, 6]) {
    const res = await fetch(`${url}/completion`, {
      method: 'POST',
      body: JSON.stringify({ prompt: 'Where, and which sign?', json_schema: SCHEMA, n_predict: 256, seed, temperature: 1, cache_prompt: false }),
    })
    const body = await res.json() as { content: string, stop_type: string, tokens_predicted: number }
    t.equal(res.status, 200)
    const answer = JSON.parse(body.content) as { city: string, sign: string }
    t.ok(SCHEMA.properties.city.enum.includes(answer.city), `seed ${seed}: ${answer.city}`)
    t.equal(answer.sign, '𝄞', `seed ${seed}: the sign whole, from its bytes`)
    t.equal(body.stop_type, 'eos', `seed ${seed}: the grammar ended the answer (${body.tokens_predicted} tokens)`)
    cities.add(answer.city)
  }
  t.ok(cities.size >= 2, `the grammar let the sampler choose (${[...cities].join(', ')})`)
})
