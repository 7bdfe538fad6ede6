import { Ollama } from 'ollama'
import t from 'tap'
import { serveTinyModels } from '../../helpers/inference.js'

t.test('the official ollama client chats and generates, streamed and not', async (t) => {
  const { url } = await serveTinyModels(t)
  const ollama = new Ollama({ host: url })
  const parts: string[] = []
  let final: any
  for await (const part of await ollama.chat({ model: 'acme/tiny', messages: [{ role: 'user', content: 'hi' }], stream: true, options: { num_predict: 6 } })) {
    if (part.done) final = part
    else parts.push(part.message.content ?? '')
  }
  t.ok(parts.length > 0, 'fragments arrived')
  t.equal(final.eval_count, 6, 'num_predict was honoured')
  t.equal(final.done_reason, 'length')
  const generated: string[] = []
  for await (const part of await ollama.generate({ model: 'acme/tiny', prompt: 'once', stream: true, options: { num_predict: 4 } })) {
    if (!part.done) generated.push(part.response ?? '')
    else t.equal(part.eval_count, 4)
  }
  t.ok(generated.length > 0)
  const whole = await ollama.chat({ model: 'acme/tiny', messages: [{ role: 'user', content: 'hi' }], options: { num_predict: 3 } })
  t.equal(whole.done, true)
  t.equal(whole.message.role, 'assistant')
  const list = await ollama.list()
  t.ok(list.models.some((m) => m.name === 'acme/tiny'))
  const running = await ollama.ps()
  t.equal(running.models[0]?.name, 'acme/tiny')
})
