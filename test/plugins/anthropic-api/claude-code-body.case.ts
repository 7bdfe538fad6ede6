import Anthropic from '@anthropic-ai/sdk'
import t from 'tap'
import { shapeMessages } from '../../../plugins/anthropic-api/messages-body.js'
import { post, serveRealisticModels } from '../../helpers/inference.js'

// Messages as Claude Code sends them (captured from Claude Code 2.1.331: /v1/messages?beta=true, anthropic-beta
// features, a system message among the others, adaptive thinking, context_management, output_config, cache_control,
// defer_loading, metadata.user_id as a JSON string), answered by the real gateway and llama-server.

const SYSTEM_MESSAGE = 'Environment: the working directory is /tmp/project, the platform is linux.'

t.test('shaping: thinking and effort for the template', async (t) => {
  const shaped = shapeMessages({ messages: [{ role: 'user', content: 'hi' }], output_config: { effort: 'high' } })
  t.same(shaped.chat_template_kwargs, { reasoning_effort: 'high' })
  t.same(shapeMessages({ messages: [{ role: 'user', content: 'hi' }], thinking: { type: 'disabled' }, output_config: { effort: 'low' } }).chat_template_kwargs, { enable_thinking: false }, 'thinking off wins over an effort')
  t.same(shapeMessages({ messages: [{ role: 'user', content: 'hi' }], thinking: { type: 'disabled' }, chat_template_kwargs: { enable_thinking: true } }).chat_template_kwargs, { enable_thinking: true }, 'llama-server\'s own kwargs, sent on purpose, win')
  const plain = { messages: [{ role: 'user', content: 'hi' }], thinking: { type: 'adaptive' } }
  t.equal(shapeMessages(plain), plain, 'nothing to shape: the body itself')
})

t.test('Claude Code\'s body: accepted, streamed to message_stop; its system message stays where it was sent', async (t) => {
  const { url } = await serveRealisticModels(t, { 'acme/qwen': 'qwen25', 'acme/qwen3': 'qwen3' })
  const headers = {
    'anthropic-version': '2023-06-01',
    'anthropic-beta': 'claude-code-20250219,interleaved-thinking-2025-05-14,context-management-2025-06-27,effort-2025-11-24',
    'x-api-key': 'unused',
  }
  const body = {
    model: 'acme/qwen',
    max_tokens: 32_000,
    stream: true,
    system: [{ type: 'text', text: 'x-anthropic-billing-header: cc_version=2.1.331.f79; cc_entrypoint=sdk-cli;' }, { type: 'text', text: 'You are Claude Code.', cache_control: { type: 'ephemeral' } }],
    messages: [
      { role: 'user', content: [{ type: 'text', text: '<system-reminder>be brief</system-reminder>' }, { type: 'text', text: 'Say hello.' }] },
      { role: 'system', content: [{ type: 'text', text: SYSTEM_MESSAGE }] },
    ],
    tools: [
      { name: 'Bash', description: 'Run a command', input_schema: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] } },
      { name: 'DeferredToolPlaceholder', description: 'Placeholder', input_schema: { type: 'object', properties: {} }, defer_loading: true },
    ],
    metadata: { user_id: JSON.stringify({ device_id: 'd', account_uuid: '', session_id: 's' }) },
    thinking: { type: 'adaptive', display: 'omitted' },
    context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] },
    output_config: { effort: 'high' },
    options: { num_predict: 4 },
  }
  const res = await post(`${url}/v1/messages?beta=true`, body, headers)
  t.equal(res.status, 200, 'Claude Code\'s body is accepted')
  const text = await res.text()
  // A load over two seconds is said first in SSE comments, which the SDK skips (docs/api.md): then Anthropic's events.
  t.match(text, /^(: [^\n]*\n\n)*event: message_start\n/, 'Anthropic\'s events')
  t.match(text, /event: message_stop\ndata: \{"type":"message_stop"\}\n\n$/)
  // Its prompt's tokens, said only in message_start, are counted as the runtime reported them.
  const started = JSON.parse(/event: message_start\ndata: (.*)\n/.exec(text)![1]!) as { message: { usage: { input_tokens: number, cache_read_input_tokens: number } } }
  const metrics = await (await fetch(`${url}/metrics`)).text()
  t.match(metrics, new RegExp(`llamagate_prompt_tokens_total\\{model="acme/qwen"\\} ${started.message.usage.input_tokens + started.message.usage.cache_read_input_tokens}\\n`), 'the prompt of a streamed Messages answer counted')

  // Qwen2.5's template renders a system message where it comes: there it stays, as an Ollama client's /api/chat with
  // the same messages has it (docs/api.md: system messages).
  const client = new Anthropic({ baseURL: url, apiKey: 'unused', maxRetries: 0 })
  const count = (request: Omit<Anthropic.MessageCountTokensParams, 'model'> & { model?: string }): Promise<number> =>
    client.messages.countTokens({ model: 'acme/qwen', ...request } as Anthropic.MessageCountTokensParams).then((r) => r.input_tokens)
  const inPlace = await count({ system: 'You are Claude Code.', messages: [{ role: 'user', content: 'Say hello.' }, { role: 'system' as 'user', content: SYSTEM_MESSAGE }] })
  const native = await (await post(`${url}/api/chat`, { model: 'acme/qwen', stream: false, messages: [{ role: 'system', content: 'You are Claude Code.' }, { role: 'user', content: 'Say hello.' }, { role: 'system', content: SYSTEM_MESSAGE }], options: { num_predict: 1 } })).json() as { prompt_eval_count: number }
  t.equal(inPlace, native.prompt_eval_count, 'a system message among the others stays where it was sent')

  // thinking disabled reaches Qwen3's template (it renders an empty think block), adaptive leaves its default.
  const thinking = (type: string): Promise<number> => count({ model: 'acme/qwen3', messages: [{ role: 'user', content: 'hi' }], thinking: { type } as Anthropic.ThinkingConfigParam })
  t.ok(await thinking('disabled') > await thinking('adaptive'), 'thinking off: the template\'s empty think block is in the prompt')

  // Listing models the way Anthropic's SDK does.
  const models = await (await fetch(`${url}/v1/models`, { headers })).json() as { data: Array<Record<string, unknown>>, has_more: boolean }
  t.match(models.data[0], { type: 'model', id: /^acme\//, display_name: /^acme\//, created_at: String })
  t.equal(models.has_more, false)
  t.match((await client.models.retrieve('acme/qwen')), { type: 'model', id: 'acme/qwen' }, 'the SDK\'s models.retrieve')
  t.match(await (await fetch(`${url}/v1/models`)).json(), { object: 'list', data: [{ object: 'model' }] }, 'without anthropic-version: OpenAI\'s shape')
})
