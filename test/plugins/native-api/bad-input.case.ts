import t from 'tap'
import { post, serveTinyModels } from '../../helpers/inference.js'

const msgs = [{ role: 'user', content: 'x' }]

t.test('bad input: a 400/404 in the right error shape, and the server still serving', async (t) => {
  const { url } = await serveTinyModels(t)
  const native: Array<[string, string, unknown, number, RegExp]> = [
    ['unknown model', '/api/chat', { model: 'acme/missing', messages: msgs }, 404, /model "acme\/missing" not found, pull it first/],
    ['unknown model (generate)', '/api/generate', { model: 'acme/missing', prompt: 'x' }, 404, /not found/],
    ['empty model name', '/api/chat', { model: '', messages: msgs }, 400, /model/],
    ['invalid model name', '/api/chat', { model: '../etc/passwd', messages: msgs }, 400, /invalid model name/],
    ['messages not a list', '/api/chat', { model: 'acme/tiny', messages: 'hello' }, 400, /messages must be array/],
    ['message content not a string', '/api/chat', { model: 'acme/tiny', messages: [{ role: 'user', content: 5 }] }, 400, /content must be string/],
    ['unknown role', '/api/chat', { model: 'acme/tiny', messages: [{ role: 'wizard', content: 'x' }] }, 400, /role/],
    ['temperature as text', '/api/chat', { model: 'acme/tiny', messages: msgs, options: { temperature: 'hot' } }, 400, /temperature must be number/],
    ['negative temperature', '/api/chat', { model: 'acme/tiny', messages: msgs, options: { temperature: -1 } }, 400, /temperature must be >= 0/],
    ['top_p above 1', '/api/chat', { model: 'acme/tiny', messages: msgs, options: { top_p: 1.5 } }, 400, /top_p must be <= 1/],
    ['num_ctx too small', '/api/chat', { model: 'acme/tiny', messages: msgs, options: { num_ctx: 4 } }, 400, /num_ctx must be >= 16/],
    ['num_parallel 0', '/api/chat', { model: 'acme/tiny', messages: msgs, options: { num_parallel: 0 } }, 400, /num_parallel must be >= 1/],
    ['top_k fraction', '/api/generate', { model: 'acme/tiny', prompt: 'x', options: { top_k: 1.5 } }, 400, /top_k must be integer/],
    ['bad cache type', '/api/generate', { model: 'acme/tiny', prompt: 'x', options: { cache_type_k: 'f8' } }, 400, /cache_type_k/],
    ['bad keep_alive', '/api/generate', { model: 'acme/tiny', prompt: 'x', keep_alive: 'later' }, 400, /invalid keep_alive/],
    // Each surface reads keep_alive with its body: every route that takes one, streamed or not, and the load forms.
    ['bad keep_alive (chat, streamed)', '/api/chat', { model: 'acme/tiny', messages: msgs, keep_alive: 'later' }, 400, /invalid keep_alive/],
    ['bad keep_alive (chat load form)', '/api/chat', { model: 'acme/tiny', keep_alive: '5 minutes' }, 400, /invalid keep_alive/],
    ['bad keep_alive (generate load form)', '/api/generate', { model: 'acme/tiny', keep_alive: 'soon' }, 400, /invalid keep_alive/],
    ['bad keep_alive (embed)', '/api/embed', { model: 'acme/tiny', input: 'x', keep_alive: 'later' }, 400, /invalid keep_alive/],
    ['bad keep_alive (embed load form)', '/api/embed', { model: 'acme/tiny', keep_alive: 'later' }, 400, /invalid keep_alive/],
    ['stream not boolean', '/api/chat', { model: 'acme/tiny', messages: msgs, stream: 'yes' }, 400, /stream must be boolean/],
  ]
  for (const [what, path, body, status, pattern] of native) {
    const res = await post(`${url}${path}`, body)
    t.equal(res.status, status, `${what}: ${status}`)
    const json = await res.json() as { error: string }
    t.type(json.error, 'string', `${what}: native shape`)
    t.match(json.error, pattern, what)
  }
  const openai: Array<[string, unknown, number, RegExp]> = [
    ['unknown model', { model: 'acme/missing', messages: msgs }, 404, /not found/],
    ['no messages', { model: 'acme/tiny', messages: [] }, 400, /messages must NOT have fewer than 1 items/],
    ['unknown role', { model: 'acme/tiny', messages: [{ role: 'robot', content: 'x' }] }, 400, /role/],
    ['temperature too high', { model: 'acme/tiny', messages: msgs, temperature: 3 }, 400, /temperature must be <= 2/],
    ['options with wrong type', { model: 'acme/tiny', messages: msgs, options: { seed: 'x' } }, 400, /seed must be integer/],
    ['missing model', { messages: msgs }, 400, /must have required property 'model'/],
    ['bad keep_alive (streamed)', { model: 'acme/tiny', messages: msgs, stream: true, keep_alive: 'later' }, 400, /invalid keep_alive/],
  ]
  for (const [what, body, status, pattern] of openai) {
    const res = await post(`${url}/v1/chat/completions`, body)
    t.equal(res.status, status, `v1 ${what}: ${status}`)
    const json = await res.json() as any
    t.equal(json.error.type, 'invalid_request_error', `v1 ${what}: OpenAI shape`)
    t.match(json.error.message, pattern, `v1 ${what}`)
  }
  const ok = await post(`${url}/api/chat`, { model: 'acme/tiny', stream: false, messages: msgs, options: { max_tokens: 2, unknown_option: 1 } })
  t.equal(ok.status, 200, 'the server still serves; unknown option keys are ignored')
})
