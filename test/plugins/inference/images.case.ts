import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import Anthropic from '@anthropic-ai/sdk'
import { Ollama } from 'ollama'
import OpenAI from 'openai'
import t, { type Test } from 'tap'
import { TINY_PROJECTOR, tinyPng } from '../../../scripts/fixtures/realistic-projector.js'
import { post, serveRealisticModels } from '../../helpers/inference.js'

const PNG = tinyPng().toString('base64')
const DATA_URL = `data:image/png;base64,${PNG}`
const IMAGE_TOKENS = TINY_PROJECTOR.tokensPerImage
const MODELS = { 'acme/vision': { kind: 'qwen25', projector: true }, 'acme/text': 'qwen25' } as const

/** A loopback server that serves the PNG and counts what it is asked. */
async function imageServer (t: Test): Promise<{ url: string, requests: string[] }> {
  const requests: string[] = []
  const server = createServer((req, res) => {
    requests.push(req.url ?? '')
    if (req.url === '/cat.png') res.writeHead(200, { 'content-type': 'image/png' }).end(tinyPng())
    else if (req.url === '/big.png') res.writeHead(200, { 'content-type': 'image/png' }).end(Buffer.alloc(64 * 1024, 1))
    else res.writeHead(404).end()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests }
}

t.test('a model with a projector: vision in /api/show, and an image reaches the model on every surface', async (t) => {
  const { url } = await serveRealisticModels(t, MODELS)
  const show = await (await post(`${url}/api/show`, { model: 'acme/vision' })).json() as any
  t.ok(show.capabilities.includes('vision'), `capabilities: ${show.capabilities.join(', ')}`)
  t.match(show.projector_info, { 'general.architecture': 'clip', 'clip.projector_type': 'mlp', 'clip.has_vision_encoder': true })
  const text = await (await post(`${url}/api/show`, { model: 'acme/text' })).json() as any
  t.notOk(text.capabilities.includes('vision'), 'a model without one: no vision')
  t.equal(text.projector_info, undefined)

  const ollama = new Ollama({ host: url })
  const question = { role: 'user', content: 'What is in this picture?' }
  const plain = await ollama.chat({ model: 'acme/vision', messages: [question], options: { num_predict: 1 } })
  const seen = await ollama.chat({ model: 'acme/vision', messages: [{ ...question, images: [PNG] }], options: { num_predict: 1 } })
  t.equal(seen.prompt_eval_count, plain.prompt_eval_count + IMAGE_TOKENS, `ollama.chat(): the image took ${IMAGE_TOKENS} positions of the prompt`)
  const bytes = await ollama.chat({ model: 'acme/vision', messages: [{ ...question, images: [tinyPng()] }], options: { num_predict: 1 } })
  t.equal(bytes.prompt_eval_count, seen.prompt_eval_count, 'ollama.chat() with the bytes (the client encodes them)')
  const generated = await ollama.generate({ model: 'acme/vision', prompt: 'Describe it.', images: [PNG], options: { num_predict: 1 } })
  const generatedPlain = await ollama.generate({ model: 'acme/vision', prompt: 'Describe it.', options: { num_predict: 1 } })
  t.equal(generated.prompt_eval_count, generatedPlain.prompt_eval_count + IMAGE_TOKENS, 'ollama.generate() with images')

  const openai = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'unused', maxRetries: 0 })
  const asked = [{ type: 'text' as const, text: 'What is in this picture?' }]
  const oaPlain = await openai.chat.completions.create({ model: 'acme/vision', max_tokens: 1, messages: [{ role: 'user', content: asked }] })
  const oaSeen = await openai.chat.completions.create({ model: 'acme/vision', max_tokens: 1, messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: DATA_URL } }, ...asked] }] })
  t.equal(oaSeen.usage!.prompt_tokens, oaPlain.usage!.prompt_tokens + IMAGE_TOKENS, 'openai chat.completions with an image_url data URL')

  const resPlain = await openai.responses.create({ model: 'acme/vision', max_output_tokens: 1, input: [{ role: 'user', content: [{ type: 'input_text', text: 'What is it?' }] }] })
  const resSeen = await openai.responses.create({ model: 'acme/vision', max_output_tokens: 1, input: [{ role: 'user', content: [{ type: 'input_image', image_url: DATA_URL, detail: 'auto' }, { type: 'input_text', text: 'What is it?' }] }] })
  t.equal(resSeen.usage!.input_tokens, resPlain.usage!.input_tokens + IMAGE_TOKENS, 'openai responses with input_image')

  const anthropic = new Anthropic({ baseURL: url, apiKey: 'unused', maxRetries: 0 })
  const anPlain = await anthropic.messages.create({ model: 'acme/vision', max_tokens: 1, messages: [{ role: 'user', content: [{ type: 'text', text: 'What is it?' }] }] })
  const anSeen = await anthropic.messages.create({ model: 'acme/vision', max_tokens: 1, messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } }, { type: 'text', text: 'What is it?' }] }] })
  t.equal(anSeen.usage.input_tokens, anPlain.usage.input_tokens + IMAGE_TOKENS, 'anthropic messages with a base64 image block')
})

t.test('remote image URLs: refused and never fetched unless config.yaml allows them; then fetched by the gateway', async (t) => {
  const images = await imageServer(t)
  const refusing = await serveRealisticModels(t, MODELS)
  const message = (imageUrl: string) => ({ model: 'acme/vision', max_tokens: 1, messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: imageUrl } }, { type: 'text', text: 'hi' }] }] })
  const refused = await post(`${refusing.url}/v1/chat/completions`, message(`${images.url}/cat.png`))
  t.equal(refused.status, 400)
  t.match(await refused.json(), { error: { message: /^image URLs are not supported here: send image 0 as a base64 data URL.*vision\.allow_remote_images/, type: 'invalid_request_error', code: 'remote_images_not_allowed' } })
  const viaAnthropic = await post(`${refusing.url}/v1/messages`, { model: 'acme/vision', max_tokens: 1, messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'url', url: `${images.url}/cat.png` } }] }] })
  t.equal(viaAnthropic.status, 400, 'Anthropic\'s url source too')
  t.match(await viaAnthropic.json(), { type: 'error', error: { type: 'invalid_request_error', message: /image URLs are not supported here/ } })
  const viaResponses = await post(`${refusing.url}/v1/responses`, { model: 'acme/vision', input: [{ role: 'user', content: [{ type: 'input_image', image_url: `${images.url}/cat.png` }] }] })
  t.equal(viaResponses.status, 400, 'the Responses API\'s input_image too')
  t.same(images.requests, [], 'nothing reached the image server: neither the gateway nor llama-server fetched it')

  const allowing = await serveRealisticModels(t, MODELS, { vision: { allow_remote_images: true, allow_private_image_hosts: true, max_remote_image_bytes: '32KiB' } })
  const fetched = await post(`${allowing.url}/v1/chat/completions`, message(`${images.url}/cat.png`))
  t.equal(fetched.status, 200)
  const inline = await post(`${allowing.url}/v1/chat/completions`, message(DATA_URL))
  t.equal((await fetched.json() as any).usage.prompt_tokens, (await inline.json() as any).usage.prompt_tokens, 'the fetched image counts as the same image sent inline')
  t.same(images.requests, ['/cat.png'], 'fetched once, by the gateway')
  const anthropicUrl = await post(`${allowing.url}/v1/messages`, { model: 'acme/vision', max_tokens: 1, messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'url', url: `${images.url}/cat.png` } }, { type: 'text', text: 'hi' }] }] })
  t.equal(anthropicUrl.status, 200, 'an Anthropic url source, fetched and sent as base64')
  const missing = await post(`${allowing.url}/v1/chat/completions`, message(`${images.url}/nothing.png`))
  t.equal(missing.status, 400)
  t.match(await missing.json(), { error: { message: /could not fetch image 0 .*nothing\.png.*answered 404/, code: 'image_fetch_failed' } })
  const big = await post(`${allowing.url}/v1/chat/completions`, message(`${images.url}/big.png`))
  t.equal(big.status, 400)
  t.match(await big.json(), { error: { message: /big\.png\) is larger than 32768 bytes/, code: 'image_too_large' } })
})

t.test('bad images: 4xx in the surface\'s shape, before anything loads', async (t) => {
  const { url } = await serveRealisticModels(t, MODELS)
  const notAnImage = Buffer.from('just some text, not a picture').toString('base64')
  const chatWith = (model: string, images: string[]) => ({ model, messages: [{ role: 'user', content: 'hi', images }] })
  const native: Array<[string, string, unknown, RegExp]> = [
    ['images to a text model (chat)', '/api/chat', chatWith('acme/text', [PNG]), /^model "acme\/text" does not support images: it has no vision projector \(mmproj\)/],
    ['images to a text model (generate)', '/api/generate', { model: 'acme/text', prompt: 'hi', images: [PNG] }, /does not support images/],
    ['bad base64', '/api/chat', chatWith('acme/vision', ['@@not base64@@']), /^image 0 of message 0 is not valid base64/],
    ['base64 of text', '/api/chat', chatWith('acme/vision', [PNG, notAnImage]), /^image 1 of message 0 is not a PNG, JPEG, GIF or BMP image/],
    ['an empty image', '/api/generate', { model: 'acme/vision', prompt: 'hi', images: [''] }, /^image 0 of the request is not valid base64/],
    ['images with raw', '/api/generate', { model: 'acme/vision', prompt: 'hi', raw: true, images: [PNG] }, /images need the chat template/],
    ['images not a list', '/api/chat', { model: 'acme/vision', messages: [{ role: 'user', content: 'hi', images: PNG }] }, /images/],
  ]
  for (const [what, path, body, message] of native) {
    const res = await post(`${url}${path}`, body)
    t.equal(res.status, 400, `${what}: 400`)
    t.match(await res.json(), { error: message }, `${what}: says why`)
  }
  const part = (imageUrl: string) => ({ role: 'user', content: [{ type: 'image_url', image_url: { url: imageUrl } }] })
  const openai: Array<[string, unknown, RegExp]> = [
    ['an image to a text model', { model: 'acme/text', messages: [part(DATA_URL)] }, /does not support images: it has no vision projector/],
    ['a file URL', { model: 'acme/vision', messages: [part('file:///etc/passwd')] }, /image 0 must be a base64 data: URL/],
    ['a data URL of text', { model: 'acme/vision', messages: [part(`data:image/png;base64,${notAnImage}`)] }, /image 0 is not a PNG, JPEG, GIF or BMP image/],
    ['a data URL with bad base64', { model: 'acme/vision', messages: [part('data:image/png;base64,!!!!')] }, /image 0 is not valid base64/],
    ['an image part without url', { model: 'acme/vision', messages: [{ role: 'user', content: [{ type: 'image_url', image_url: {} }] }] }, /an image part has no url/],
  ]
  for (const [what, body, message] of openai) {
    const res = await post(`${url}/v1/chat/completions`, body)
    t.equal(res.status, 400, `${what}: 400`)
    t.match(await res.json(), { error: { message, type: 'invalid_request_error' } }, `${what}: OpenAI's shape says why`)
  }
  const anthropic = await post(`${url}/v1/messages`, { model: 'acme/text', max_tokens: 1, messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } }] }] })
  t.equal(anthropic.status, 400)
  t.match(await anthropic.json(), { type: 'error', error: { type: 'invalid_request_error', message: /does not support images/ } }, 'Anthropic\'s shape')
  t.same((await (await fetch(`${url}/api/ps`)).json() as any).models, [], 'no bad request loaded a model')
})
