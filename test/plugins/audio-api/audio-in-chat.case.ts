import { Ollama } from 'ollama'
import OpenAI from 'openai'
import t from 'tap'
import { audioTokens, tinyWav } from '../../../scripts/fixtures/realistic-audio-projector.js'
import { post, serveRealisticModels, sharedServer } from '../../helpers/inference.js'

// Audio in a conversation: OpenAI chat's `input_audio` parts, the Responses API's, and Ollama's `images` carrying
// sound (as Ollama takes it for a model that hears), on a model with an audio projector; checked before llama-server
// sees them (base64 only, never a URL it would fetch or a file it would read), refused clearly where the model
// cannot hear.

const served = sharedServer(() => serveRealisticModels(t, {
  'acme/hears': { kind: 'qwen25', projector: 'audio' },
  'acme/text': 'qwen25',
}))

const WAV = tinyWav(1).toString('base64')
const audioPart = (data: string = WAV): Record<string, unknown> => ({ type: 'input_audio', input_audio: { data, format: 'wav' } })

async function promptTokens (url: string, content: unknown): Promise<number> {
  const res = await post(`${url}/v1/chat/completions`, { model: 'acme/hears', messages: [{ role: 'user', content }], max_tokens: 1 })
  const body = await res.json() as { usage: { prompt_tokens: number } }
  if (res.status !== 200) throw new Error(JSON.stringify(body))
  return body.usage.prompt_tokens
}

t.test('openai chat: an input_audio part is heard, its positions in the prompt; the official client sends it', async (t) => {
  const { url } = await served()
  const without = await promptTokens(url, [{ type: 'text', text: 'What is this?' }])
  const withAudio = await promptTokens(url, [{ type: 'text', text: 'What is this?' }, audioPart()])
  t.equal(withAudio - without, audioTokens(1), `one second of audio takes ${audioTokens(1)} positions`)
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'unused' })
  const answer = await client.chat.completions.create({ model: 'acme/hears', max_tokens: 2, messages: [{ role: 'user', content: [{ type: 'text', text: 'Hear this' }, { type: 'input_audio', input_audio: { data: WAV, format: 'wav' } }] }] })
  t.ok(answer.usage!.prompt_tokens > audioTokens(1), `the client's audio is in the prompt (${answer.usage!.prompt_tokens})`)
})

t.test('the Responses API: an input_audio part, as chat completions has it', async (t) => {
  const { url } = await served()
  const res = await post(`${url}/v1/responses`, { model: 'acme/hears', max_output_tokens: 2, input: [{ role: 'user', content: [{ type: 'input_text', text: 'Hear this' }, audioPart()] }] })
  const body = await res.json() as { usage: { input_tokens: number } }
  t.equal(res.status, 200, JSON.stringify(body))
  t.ok(body.usage.input_tokens > audioTokens(1), `the audio is in the prompt (${body.usage.input_tokens})`)
})

t.test('ollama: a WAV among a message\'s images is heard, as Ollama takes audio for a model that hears', async (t) => {
  const { url } = await served()
  const ollama = new Ollama({ host: url })
  const plain = await ollama.chat({ model: 'acme/hears', messages: [{ role: 'user', content: 'Hear this' }], options: { num_predict: 1 } })
  const heard = await ollama.chat({ model: 'acme/hears', messages: [{ role: 'user', content: 'Hear this', images: [WAV] }], options: { num_predict: 1 } })
  t.equal(heard.prompt_eval_count - plain.prompt_eval_count, audioTokens(1), 'the audio\'s positions in the prompt')
  const generated = await ollama.generate({ model: 'acme/hears', prompt: 'Hear this', images: [WAV], options: { num_predict: 1 } })
  t.ok(generated.prompt_eval_count > audioTokens(1))
})

t.test('refused before llama-server: a URL (it would fetch it or read a file), bad base64, no audio, a model that cannot hear', async (t) => {
  const { url } = await served()
  const cases: Array<[string, string, Record<string, unknown>, RegExp, string]> = [
    ['an http URL', 'acme/hears', audioPart('http://169.254.169.254/latest/meta-data'), /is a URL: audio is taken as base64 data only, never fetched/, 'invalid_audio'],
    ['a file URL', 'acme/hears', audioPart('file:///etc/passwd'), /is a URL/, 'invalid_audio'],
    ['not base64', 'acme/hears', audioPart('@@not base64@@'), /is not valid base64/, 'invalid_audio'],
    ['not audio', 'acme/hears', audioPart(Buffer.from('plain words, no sound').toString('base64')), /is not WAV, MP3 or FLAC audio/, 'invalid_audio'],
    ['no data', 'acme/hears', { type: 'input_audio', input_audio: {} }, /has no data/, 'invalid_audio'],
    ['a text model', 'acme/text', audioPart(), /model "acme\/text" does not support audio: it has no audio projector/, 'audio_not_supported'],
  ]
  for (const [what, model, part, message, code] of cases) {
    const res = await post(`${url}/v1/chat/completions`, { model, max_tokens: 1, messages: [{ role: 'user', content: [{ type: 'text', text: 'Hear this' }, part] }] })
    const body = await res.json() as { error: { message: string, code: string, type: string } }
    t.equal(res.status, 400, `${what}: ${JSON.stringify(body)}`)
    t.match(body.error, { message, code, type: 'invalid_request_error' }, what)
  }
  const ollama = await post(`${url}/api/chat`, { model: 'acme/text', stream: false, messages: [{ role: 'user', content: 'x', images: [WAV] }] })
  t.equal(ollama.status, 400)
  t.match(await ollama.json(), { error: /model "acme\/text" does not support audio/ }, 'Ollama\'s shape')
})
