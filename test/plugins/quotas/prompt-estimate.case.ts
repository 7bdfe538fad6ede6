// What a daily token limit reserves for a prompt at the door, before any runtime read it.
import t from 'tap'
import { BYTES_PER_TOKEN, promptEstimate, TOKENS_PER_AUDIO_WINDOW, TOKENS_PER_IMAGE, TOKENS_PER_MESSAGE, TOKENS_PER_REQUEST } from '../../../plugins/quotas/prompt-estimate.js'
import { tinyWav } from '../../../scripts/fixtures/realistic-audio-projector.js'

const base = TOKENS_PER_REQUEST

t.test('text at its bytes, a message its template markers, names and settings not at all', async (t) => {
  t.equal(promptEstimate({ model: 'acme/tiny', stream: true, max_tokens: 9000, temperature: 0.5, messages: [{ role: 'user', content: 'x'.repeat(30) }] }),
    base + 30 / BYTES_PER_TOKEN + TOKENS_PER_MESSAGE)
  t.equal(promptEstimate({ model: 'm', prompt: 'é'.repeat(30) }), base + 60 / BYTES_PER_TOKEN, 'bytes, not characters')
  t.equal(promptEstimate({ model: 'm', system: 'abc', messages: [{ role: 'user', content: [{ type: 'text', text: 'abcdef' }] }] }),
    base + Math.ceil((3 + 6) / BYTES_PER_TOKEN) + TOKENS_PER_MESSAGE, 'Anthropic\'s system and content blocks')
  const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }]
  t.equal(promptEstimate({ model: 'm', tools }), base + Math.ceil(JSON.stringify(tools).length / BYTES_PER_TOKEN), 'tools as the JSON a template renders')
})

t.test('an image is an image wherever a surface puts it, however long its data', async (t) => {
  const data = 'A'.repeat(300_000)
  t.equal(promptEstimate({ messages: [{ role: 'user', content: 'hi', images: [data, data] }] }), base + 1 + TOKENS_PER_MESSAGE + 2 * TOKENS_PER_IMAGE, 'Ollama\'s images')
  t.equal(promptEstimate({ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: `data:image/png;base64,${data}` } }] }] }), base + TOKENS_PER_MESSAGE + TOKENS_PER_IMAGE, 'a data: URL')
  t.equal(promptEstimate({ messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data } }] }] }),
    base + Math.ceil('image/png'.length / BYTES_PER_TOKEN) + TOKENS_PER_MESSAGE + TOKENS_PER_IMAGE, 'Anthropic\'s base64 source')
  t.equal(promptEstimate({ prompt: data }), base + data.length / BYTES_PER_TOKEN, 'a long text that looks like base64 is still text: a client cannot shrink its reservation so')
})

t.test('token ids count one each where a surface takes them; other numbers are settings', async (t) => {
  t.equal(promptEstimate({ model: 'm', prompt: [1, 2, 3, 4] }), base + 4)
  t.equal(promptEstimate({ model: 'm', input: [[1, 2], [3]] }), base + 3, 'several inputs of ids')
  t.equal(promptEstimate({ model: 'm', prompt: 'ab', context: [5, 6, 7], options: { num_predict: 100, stop: ['zz'] } }), base + Math.ceil(4 / BYTES_PER_TOKEN) + 3, 'Ollama\'s context; a stop string is text')
})

t.test('audio at its length, 30 s windows, wherever a surface puts it; not at its base64\'s bytes', async (t) => {
  const second = tinyWav(1).toString('base64')
  const minute = tinyWav(61).toString('base64')
  const part = (data: string): unknown => ({ type: 'input_audio', input_audio: { data, format: 'wav' } })
  t.equal(promptEstimate({ messages: [{ role: 'user', content: [part(second)] }] }), base + TOKENS_PER_MESSAGE + TOKENS_PER_AUDIO_WINDOW, 'one second: one window (its 43 kB of base64 would be 14,000 tokens as text)')
  t.equal(promptEstimate({ messages: [{ role: 'user', content: [part(`data:audio/wav;base64,${minute}`)] }] }), base + TOKENS_PER_MESSAGE + 3 * TOKENS_PER_AUDIO_WINDOW, '61 s in a data URL: three windows')
  t.equal(promptEstimate({ messages: [{ role: 'user', content: 'hi', images: [minute] }] }), base + 1 + TOKENS_PER_MESSAGE + 3 * TOKENS_PER_AUDIO_WINDOW, 'a sound among Ollama\'s images')
  t.equal(promptEstimate({ model: 'm', file: tinyWav(1), prompt: 'names' }), base + Math.ceil(5 / BYTES_PER_TOKEN) + TOKENS_PER_AUDIO_WINDOW, 'a transcription\'s uploaded file')
  t.equal(promptEstimate({ messages: [{ role: 'user', content: [part('not audio at all')] }] }), base + TOKENS_PER_MESSAGE + TOKENS_PER_AUDIO_WINDOW, 'a part that is no audio: one window (it is refused later)')
})
