import t from 'tap'
import { problemsOf } from './answer-problems.js'
import { statusRoutesBroken } from './property-checks.js'
import { nested } from './raw-json.js'
import { jsonReq, Req, send } from './requests.js'
import { tinyApp } from './tiny-app.js'

// The smallest bodies the properties of this folder found breaking them, kept as plain cases so that each one
// is reported by name (a property stops at its first failure) and stays fixed. Each answer must pass the same
// checks as in the properties: no 500, no stack trace or engine error text, the surface's error shape, and
// the status routes still answering after it.

const DEEP = 5000
const chain = nested(DEEP, '[{"content":', '}]', '1')

const CASES: Array<{ name: string, url: string, body: unknown }> = [
  // A recursive walk of the messages for images (plugins/openai-api/image-urls.ts) overflows the stack: 500.
  { name: 'OpenAI chat: a deep content chain in a part', url: '/v1/chat/completions', body: { model: 'acme/tiny', messages: [{ content: [{ type: 'text', text: 'x', content: chain }] }] } },
  { name: 'Responses: a deep content chain in an input item', url: '/v1/responses', body: { model: 'acme/tiny', input: [{ content: chain }] } },
  { name: 'Anthropic messages: a deep content chain in a block', url: '/v1/messages', body: { model: 'acme/tiny', max_tokens: 1, messages: [{ role: 'user', content: [{ type: 'text', text: 'x', content: chain }] }] } },
  // JSON.stringify of a tool call's arguments (plugins/native-api/chat.ts) overflows the stack: 500.
  { name: 'native chat: deeply nested tool call arguments', url: '/api/chat', body: { model: 'acme/tiny', stream: false, messages: [{ role: 'user', content: '', tool_calls: [{ function: { name: 'f', arguments: { a: nested(DEEP, '{"a":', '}', '1') } } }] }] } },
  // JSON.stringify of the runtime request overflows inside the lease: answered 502 "lost the connection to the
  // runtime ...: Maximum call stack size exceeded", a second late (plugins/scheduler/upstream-failure.ts).
  { name: 'OpenAI completions: a deeply nested unknown field', url: '/v1/completions', body: { model: 'acme/tiny', prompt: 'x', x: nested(DEEP, '[', ']', '1') } },
  { name: 'native generate: a deeply nested format schema', url: '/api/generate', body: { model: 'acme/tiny', prompt: 'x', stream: false, format: { type: 'object', properties: nested(DEEP, '[', ']', '1') } } },
  { name: 'Anthropic count_tokens: a deep content chain in a block', url: '/v1/messages/count_tokens', body: { model: 'acme/tiny', messages: [{ role: 'user', content: [{ type: 'text', text: 'x', content: chain }] }] } },
  // keep_alive of 10^13 s is finite, so accepted; the expiry it makes is past what a Date can hold, and
  // GET /api/ps (plugins/native-api/ps.ts, toISOString) answers 500 while the model is loaded.
  { name: 'native chat load: keep_alive 1e13 seconds', url: '/api/chat', body: { model: 'acme/tiny', messages: [], keep_alive: 1e13 } },
  { name: 'OpenAI chat: keep_alive 1e13 seconds', url: '/v1/chat/completions', body: { model: 'acme/tiny', messages: [{ content: 'hi' }], keep_alive: 1e13 } },
]

t.test('counterexamples found by the properties', async (t) => {
  const { app } = await tinyApp(t)
  for (const c of CASES) {
    await t.test(`${c.name}: POST ${c.url}`, async (t) => {
      const req = jsonReq('POST', c.url, c.body)
      const answer = await send(app, req)
      t.same(problemsOf(req, answer), [], `answered ${answer.status}: ${answer.body.slice(0, 200)}`)
      t.equal(await statusRoutesBroken(app), null, 'the status routes still answer')
      await app.scheduler.stop('acme/tiny')
    })
  }

  // Not a 500, but found the same way: a keep_alive past setTimeout's limit (2^31 - 1 ms, about 24.8 days)
  // fires at once (Node: TimeoutOverflowWarning), so "keep it loaded for 600 hours" unloads it in 1 ms.
  await t.test('keep_alive "600h" keeps the model loaded', async (t) => {
    const res = await send(app, jsonReq('POST', '/api/chat', { model: 'acme/tiny', messages: [], keep_alive: '600h' }))
    t.equal(res.status, 200)
    await new Promise((resolve) => setTimeout(resolve, 300))
    const ps = JSON.parse((await send(app, new Req('GET', '/api/ps'))).body) as { models: unknown[] }
    t.equal(ps.models.length, 1, 'still loaded 300 ms later')
    await app.scheduler.stop('acme/tiny')
  })
})
