import OpenAI from 'openai'
import t from 'tap'
import { ConfigError, resolveConfig } from '../../../core/platform/config.js'
import { post, serveTinyModels } from '../../helpers/inference.js'

// The names agents send (claude-sonnet-4-5, gpt-5-codex) reach a chosen local model: config.yaml's
// models.<name>.aliases and LLAMAGATE_ALIASES, on every surface, listed in /v1/models.

t.test('an alias reaches its model on every surface, and /v1/models lists it', async (t) => {
  const { url } = await serveTinyModels(t, ['acme/tiny', 'acme/other'], { models: { 'acme/tiny': { aliases: ['claude-sonnet-4-5', 'GPT-5-Codex'] } } })
  const chat = await post(`${url}/api/chat`, { model: 'claude-sonnet-4-5', stream: false, messages: [{ role: 'user', content: 'hi' }], options: { num_predict: 2 } })
  t.equal(chat.status, 200, '/api/chat')
  t.equal(((await chat.json()) as { model: string }).model, 'acme/tiny', 'answered by the model it names')
  const openai = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'unused', maxRetries: 0 })
  const completion = await openai.chat.completions.create({ model: 'gpt-5-codex', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 })
  t.equal(completion.choices.length, 1, '/v1/chat/completions, the alias in any case')
  const messages = await post(`${url}/v1/messages`, { model: 'claude-sonnet-4-5', max_tokens: 2, messages: [{ role: 'user', content: 'hi' }] })
  t.equal(messages.status, 200, '/v1/messages')
  const loaded = await post(`${url}/api/generate`, { model: 'claude-sonnet-4-5' })
  t.match(await loaded.json(), { model: 'acme/tiny', done_reason: 'load' }, 'the load form')
  const ids = (await openai.models.list()).data.map((m) => m.id)
  t.same(ids.filter((id) => !id.includes('/')).sort(), ['claude-sonnet-4-5', 'gpt-5-codex'], 'listed under their names')
  t.equal((await openai.models.retrieve('claude-sonnet-4-5')).id, 'claude-sonnet-4-5', 'and retrieved by them')
  const unknown = await post(`${url}/v1/chat/completions`, { model: 'claude-opus-9', messages: [{ role: 'user', content: 'hi' }] })
  t.equal(unknown.status, 400, 'a name that is neither a model nor an alias: the name is refused')
})

t.test('LLAMAGATE_ALIASES, and the mistakes refused at start', async (t) => {
  const env = (text: string): Record<string, string> => Object.fromEntries(resolveConfig([{ source: 'environment', values: { __aliases: text.split(',') } }]).aliases)
  t.same(env('claude-sonnet-4-5=acme/tiny, gpt-5=acme/other'), { 'claude-sonnet-4-5': 'acme/tiny', 'gpt-5': 'acme/other' })
  t.throws(() => env('nonsense'), /LLAMAGATE_ALIASES: "nonsense" is not alias=owner\/name/)
  t.throws(() => resolveConfig([{ source: 'config.yaml', values: { models: { 'acme/a': { aliases: ['x'] }, 'acme/b': { aliases: ['X'] } } } }]), ConfigError)
  t.throws(() => resolveConfig([{ source: 'config.yaml', values: { models: { 'acme/a': { aliases: ['has space'] } } } }]), /aliases/)
})
