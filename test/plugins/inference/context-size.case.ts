import Anthropic from '@anthropic-ai/sdk'
import OpenAI from 'openai'
import t from 'tap'
import { importLongContextModel, post, serveTinyModels } from '../../helpers/inference.js'

// A model trained for 32k tokens of context, served with the shipped num_ctx 4096: a prompt of 12,000 tokens is not
// refused on any surface (the model is loaded again with a context that holds it), and the context stays grown;
// past the trained context each surface answers with its own context-exceeded error, which its clients parse.

type Entry = Record<string, any>
const words = (n: number): string => 'the '.repeat(n)

t.test('a 12,000-token prompt on a model trained for 32k: answered on every surface; past 32k, each surface\'s error', async (t) => {
  const { app, url } = await serveTinyModels(t, [], { default_options: { num_ctx: 4096, num_parallel: 4 } })
  await importLongContextModel(t, app, 'acme/long', 32_768)
  const prompt = words(12_000)
  const ask = { model: 'acme/long', stream: false, options: { num_predict: 4 } }

  const chat = await post(`${url}/api/chat`, { ...ask, messages: [{ role: 'user', content: prompt }] })
  t.equal(chat.status, 200, '/api/chat')
  const answer = await chat.json() as Entry
  t.ok(answer.prompt_eval_count >= 12_000 && answer.prompt_eval_count < 12_100, `the whole prompt was read (${answer.prompt_eval_count} tokens)`)
  const ps = await (await fetch(`${url}/api/ps`)).json() as Entry
  t.equal(ps.models.length, 1, 'one instance left: the smaller one went')
  t.equal(ps.models[0].context_length, 16_384, 'loaded again with the ladder size that holds the prompt and its reply')

  const openai = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'unused', maxRetries: 0 })
  const completion = await openai.chat.completions.create({ model: 'acme/long', messages: [{ role: 'user', content: prompt }], max_tokens: 4 })
  t.ok(completion.usage!.prompt_tokens >= 12_000, '/v1/chat/completions')
  const responses = await post(`${url}/v1/responses`, { model: 'acme/long', input: prompt, max_output_tokens: 4 })
  t.equal(responses.status, 200, '/v1/responses')
  const anthropic = new Anthropic({ baseURL: url, apiKey: 'unused', maxRetries: 0 })
  const message = await anthropic.messages.create({ model: 'acme/long', max_tokens: 4, messages: [{ role: 'user', content: prompt }] })
  t.ok(message.usage.input_tokens + (message.usage.cache_read_input_tokens ?? 0) >= 12_000, '/v1/messages')
  t.equal(((await (await fetch(`${url}/api/ps`)).json()) as Entry).models[0].context_length, 16_384, 'the grown context stays for later requests')

  // Past the trained context: no context holds it.
  const huge = words(40_000)
  const native = await post(`${url}/api/chat`, { ...ask, truncate: false, messages: [{ role: 'user', content: huge }] })
  t.equal(native.status, 400)
  t.match(((await native.json()) as Entry).error, /^the input length exceeds the context length: the prompt is 400\d\d tokens, and the model holds 32768 \(its trained context\)$/, 'Ollama\'s words, with the figures')
  const tooLong = await openai.chat.completions.create({ model: 'acme/long', messages: [{ role: 'user', content: huge }], max_tokens: 4 }).catch((err: unknown) => err) as InstanceType<typeof OpenAI.APIError>
  t.equal(tooLong.status, 400)
  t.equal(tooLong.code, 'context_length_exceeded', 'OpenAI\'s code, which clients compact their history on')
  t.match(tooLong.message, /This model's maximum context length is 32768 tokens\. However, your messages resulted in 400\d\d tokens/)
  const responsesTooLong = await post(`${url}/v1/responses`, { model: 'acme/long', input: huge })
  t.equal(responsesTooLong.status, 400)
  t.equal(((await responsesTooLong.json()) as Entry).error.code, 'context_length_exceeded')
  const claude = await anthropic.messages.create({ model: 'acme/long', max_tokens: 4, messages: [{ role: 'user', content: huge }] }).catch((err: unknown) => err) as InstanceType<typeof Anthropic.APIError>
  t.equal(claude.status, 400)
  t.match(claude.error, { type: 'error', error: { type: 'invalid_request_error', message: /^prompt is too long: 400\d\d tokens > 32768 maximum$/ } }, 'Anthropic\'s words, which Claude Code reads the figures from')
})

t.test('a request that fixes num_ctx keeps it: too long is its error, not a reload', async (t) => {
  const { app, url } = await serveTinyModels(t, [], { default_options: { num_ctx: 4096, num_parallel: 1 } })
  await importLongContextModel(t, app, 'acme/long', 32_768)
  const res = await post(`${url}/api/chat`, { model: 'acme/long', stream: false, truncate: false, options: { num_ctx: 2048, num_predict: 2 }, messages: [{ role: 'user', content: words(3000) }] })
  t.equal(res.status, 400)
  t.match(((await res.json()) as Entry).error, /the prompt is 30\d\d tokens, and the model holds 2048 \(the request set num_ctx\)/)
})

t.test('Ollama\'s truncate: the oldest messages of a conversation too long go, the system prompt and the last message stay', async (t) => {
  const { app, url } = await serveTinyModels(t, [], { default_options: { num_ctx: 4096, num_parallel: 1 } })
  await importLongContextModel(t, app, 'acme/short', 2048)
  const messages = [
    { role: 'system', content: 'be brief' },
    ...Array.from({ length: 6 }, (_, i) => ({ role: i % 2 === 0 ? 'user' : 'assistant', content: words(600) })),
    { role: 'user', content: 'the end' },
  ]
  const res = await post(`${url}/api/chat`, { model: 'acme/short', stream: false, options: { num_predict: 2 }, messages })
  t.equal(res.status, 200, 'truncated to fit (Ollama\'s default)')
  const answer = await res.json() as Entry
  t.ok(answer.prompt_eval_count < 2048 && answer.prompt_eval_count > 600, `what was left fits (${answer.prompt_eval_count} tokens)`)
  const refused = await post(`${url}/api/chat`, { model: 'acme/short', stream: false, truncate: false, options: { num_predict: 2 }, messages })
  t.equal(refused.status, 400, 'truncate: false answers the error')
})
