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
