import Anthropic from '@anthropic-ai/sdk'
import { Ollama } from 'ollama'
import OpenAI from 'openai'
import t from 'tap'
import { TINY_PROJECTOR, tinyPng } from '../../../scripts/fixtures/realistic-projector.js'
import { post, serveRealisticModels, serveTinyModels } from '../../helpers/inference.js'
import { until } from '../../helpers/until.js'

// Images to an upstream's model: sent as they came (checked, URLs fetched here as config.yaml allows), and the
// upstream says whether its model reads them. A back llamagate serves a vision model (a projector beside it) and a
// text one; the front knows no projector of either.

const PNG = tinyPng().toString('base64')
const DATA_URL = `data:image/png;base64,${PNG}`
const IMAGE_TOKENS = TINY_PROJECTOR.tokensPerImage

t.test('an image to an upstream\'s vision model reaches it on every surface; a text model\'s upstream refuses it', async (t) => {
  const back = await serveRealisticModels(t, { 'acme/vision': { kind: 'qwen25', projector: true }, 'acme/text': 'qwen25' })
  const front = await serveTinyModels(t, [], { upstreams: [{ name: 'back', url: back.url, kind: 'llamagate', prefix: 'back/' }] })
  await until('the back listed', () => front.app.upstreams.stateOf('back')?.healthy === true)
  const model = 'back/acme/vision'

  const show = await (await post(`${front.url}/api/show`, { model })).json() as { capabilities: string[] }
  t.ok(show.capabilities.includes('vision'), `the upstream's capabilities: ${show.capabilities.join(', ')}`)

  const ollama = new Ollama({ host: front.url })
  const question = { role: 'user', content: 'What is in this picture?' }
  const plain = await ollama.chat({ model, messages: [question], options: { num_predict: 1 } })
  const seen = await ollama.chat({ model, messages: [{ ...question, images: [PNG] }], options: { num_predict: 1 } })
  t.equal(seen.prompt_eval_count, plain.prompt_eval_count + IMAGE_TOKENS, `ollama.chat(): the image took ${IMAGE_TOKENS} positions of the upstream's prompt`)
  const generated = await ollama.generate({ model, prompt: 'Describe it.', images: [PNG], options: { num_predict: 1 } })
  const generatedPlain = await ollama.generate({ model, prompt: 'Describe it.', options: { num_predict: 1 } })
  t.equal(generated.prompt_eval_count, generatedPlain.prompt_eval_count + IMAGE_TOKENS, 'ollama.generate() with images')

  const openai = new OpenAI({ baseURL: `${front.url}/v1`, apiKey: 'unused', maxRetries: 0 })
  const asked = [{ type: 'text' as const, text: 'What is in this picture?' }]
  const oaPlain = await openai.chat.completions.create({ model, max_tokens: 1, messages: [{ role: 'user', content: asked }] })
  const oaSeen = await openai.chat.completions.create({ model, max_tokens: 1, messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: DATA_URL } }, ...asked] }] })
  t.equal(oaSeen.usage!.prompt_tokens, oaPlain.usage!.prompt_tokens + IMAGE_TOKENS, 'openai chat.completions with an image_url')

  const anthropic = new Anthropic({ baseURL: front.url, apiKey: 'unused', maxRetries: 0 })
  const anPlain = await anthropic.messages.create({ model, max_tokens: 1, messages: [{ role: 'user', content: [{ type: 'text', text: 'What is it?' }] }] })
  const anSeen = await anthropic.messages.create({ model, max_tokens: 1, messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } }, { type: 'text', text: 'What is it?' }] }] })
  t.equal(anSeen.usage.input_tokens, anPlain.usage.input_tokens + IMAGE_TOKENS, 'anthropic messages with a base64 image block')

  // Counted under the name served here, like a stored model's requests.
  const metrics = await (await fetch(`${front.url}/metrics`)).text()
  t.match(metrics, /llamagate_requests_total\{[^}]*model="back\/acme\/vision"[^}]*status="200"[^}]*\} \d+/, 'requests by the upstream model\'s name')
  t.match(metrics, /llamagate_generated_tokens_total\{model="back\/acme\/vision"\} [1-9]/, 'and its tokens')

  // A text model: the upstream's own refusal, in the surface's shape; a bad image still stops at the front.
  const refused = await post(`${front.url}/api/chat`, { model: 'back/acme/text', messages: [{ ...question, images: [PNG] }], stream: false })
  t.equal(refused.status, 400)
  t.match(await refused.json(), { error: /does not support images/ }, 'the upstream says its model reads no images')
  const refusedOa = await post(`${front.url}/v1/chat/completions`, { model: 'back/acme/text', max_tokens: 1, messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: DATA_URL } }, ...asked] }] })
  t.equal(refusedOa.status, 400)
  t.match(await refusedOa.json(), { error: { message: /does not support images/, type: 'invalid_request_error' } })
  const notAnImage = await post(`${front.url}/api/chat`, { model, messages: [{ ...question, images: [Buffer.from('not a picture').toString('base64')] }], stream: false })
  t.equal(notAnImage.status, 400)
  t.match(await notAnImage.json(), { error: /is not a PNG, JPEG, GIF or BMP image/ }, 'checked here before anything is sent')
})
