import { Ollama } from 'ollama'
import t from 'tap'
import { serveRealisticModels } from '../../helpers/inference.js'

t.test('ollama.show on realistic models: capabilities from the template, flat details, model_info, parameters', async (t) => {
  const { url } = await serveRealisticModels(t, { 'acme/qwen': 'qwen25', 'acme/r1': 'r1' }, { models: { 'acme/qwen': { options: { temperature: 0.2, stop: ['<|im_end|>', 'END'] } } } })
  const ollama = new Ollama({ host: url })
  const qwen = await ollama.show({ model: 'acme/qwen' })
  t.same(qwen.capabilities, ['completion', 'tools'], 'Qwen2.5\'s template renders tools, and no reasoning')
  t.equal(qwen.details.family, 'qwen2', 'family where Ollama\'s clients read it')
  t.equal(qwen.details.format, 'gguf')
  t.equal(qwen.details.quantization_level, 'F16')
  // The client types it as a Map; on the wire it is an object.
  const info = qwen.model_info as unknown as Record<string, unknown>
  t.equal(info['general.architecture'], 'qwen2')
  t.equal(info['qwen2.embedding_length'], 64)
  t.match(qwen.template, /<tools>/)
  t.match(qwen.parameters, /^temperature\s+0\.2$/m)
  t.match(qwen.parameters, /^stop\s+"END"$/m, 'one line per stop word, as a Modelfile writes them')
  const r1 = await ollama.show({ model: 'acme/r1' })
  t.ok(r1.capabilities.includes('thinking'), `the R1 template handles reasoning: ${r1.capabilities.join(', ')}`)
})

t.test('model_info is read from the file once and then kept; verbose still reads the long arrays', async (t) => {
  const { url } = await serveRealisticModels(t, { 'acme/qwen': 'qwen25' })
  const ollama = new Ollama({ host: url })
  const first = await ollama.show({ model: 'acme/qwen' })
  const second = await ollama.show({ model: 'acme/qwen' })
  t.same(second.model_info, first.model_info, 'the kept header says what the file says')
  const tokens = (first.model_info as unknown as Record<string, unknown>)['tokenizer.ggml.tokens']
  t.same(tokens, [], 'long arrays are empty without verbose')
  // ollama-js does not send verbose; its API does.
  const verbose = await (await fetch(`${url}/api/show`, { method: 'POST', body: JSON.stringify({ model: 'acme/qwen', verbose: true }) })).json() as { model_info: Record<string, unknown> }
  const all = verbose.model_info['tokenizer.ggml.tokens'] as string[]
  t.ok(all.length > 150_000, `verbose has the whole vocabulary (${all.length} tokens)`)
  const third = await ollama.show({ model: 'acme/qwen' })
  t.same((third.model_info as unknown as Record<string, unknown>)['tokenizer.ggml.tokens'], [], 'a verbose answer does not change what is kept')
})
