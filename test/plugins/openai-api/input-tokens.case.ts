import t from 'tap'
import { post, serveRealisticModels } from '../../helpers/inference.js'

const TOOLS = [{ type: 'function', function: { name: 'get_weather', description: 'The weather in a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }]

t.test('input-token counts: what a chat or a Responses request would be counted for, without running it', async (t) => {
  const { url } = await serveRealisticModels(t, { 'acme/qwen': 'qwen25' })
  const messages = [{ role: 'system', content: 'You are terse.' }, { role: 'user', content: 'What is the weather in Paris today?' }]
  const counted = await post(`${url}/v1/chat/completions/input_tokens`, { model: 'acme/qwen', messages, tools: TOOLS })
  t.equal(counted.status, 200)
  const { object, input_tokens: chatCount } = await counted.json() as { object: string, input_tokens: number }
  t.equal(object, 'chat.completion.input_tokens')
  const ran = await (await post(`${url}/v1/chat/completions`, { model: 'acme/qwen', messages, tools: TOOLS, max_tokens: 1 })).json() as { usage: { prompt_tokens: number } }
  t.equal(chatCount, ran.usage.prompt_tokens, `the count is what the request was counted for (${chatCount} tokens, tools included)`)
  const bare = await (await post(`${url}/v1/chat/completions/input_tokens`, { model: 'acme/qwen', messages })).json() as { input_tokens: number }
  t.ok(bare.input_tokens < chatCount, 'without the tools, fewer')

  const responses = await post(`${url}/v1/responses/input_tokens`, { model: 'acme/qwen', instructions: 'You are terse.', input: 'What is the weather in Paris today?' })
  t.equal(responses.status, 200)
  const count = await responses.json() as { object: string, input_tokens: number }
  t.equal(count.object, 'response.input_tokens')
  const response = await (await post(`${url}/v1/responses`, { model: 'acme/qwen', instructions: 'You are terse.', input: 'What is the weather in Paris today?', max_output_tokens: 1 })).json() as { usage: { input_tokens: number } }
  t.equal(count.input_tokens, response.usage.input_tokens, 'a Responses request\'s count is what it was counted for')
  const unknown = await post(`${url}/v1/responses/input_tokens`, { model: 'acme/none', input: 'x' })
  t.equal(unknown.status, 404)
  t.match(await unknown.json(), { error: { message: /not found/, type: 'invalid_request_error' } }, 'in OpenAI\'s shape')
})
