import t from 'tap'
import { LlamaServer } from '../../../runtimes/process/llama-server.js'
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
  const server = new LlamaServer({ build: await cpuRuntime(), modelPath: await realisticModel('qwen25'), alias: 'tiny/qwen25', ctxSize: 512, parallel: 1, threads: 1 })
  t.teardown(() => server.stop())
  await server.start()
  const url = server.endpoint.address.baseUrl
  const post = (path: string, body: unknown): Promise<Response> => fetch(`${url}${path}`, { method: 'POST', body: JSON.stringify(body) })
  const sign = await (await post('/tokenize', { content: '𝄞' })).json() as { tokens: number[] }
  t.ok(sign.tokens.length > 1, `"𝄞" is ${sign.tokens.length} byte tokens, none of them a whole character`)
  const cities = new Set<string>()
  for (const seed of [1, 2, 3, 4, 5, 6]) {
    const res = await post('/completion', { prompt: 'Where, and which sign?', json_schema: SCHEMA, n_predict: 256, seed, temperature: 1, cache_prompt: false })
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
