// A system message that arrives late in a conversation, on every surface, with the real llama-server and three
// templates: Qwen2.5's renders it where it comes (it stays there); DeepSeek-R1's renders the last system message first
// and drops the others, and a strict one raises an exception for a system message that is not first (it becomes user
// text in its place). Either way the second turn's prompt starts with the first turn's: the runtime reads it from its
// cache (plugins/inference/system-placement.ts, chat-system-messages.ts).
import t from 'tap'
import { post, serveRealisticModels, sharedServer } from '../../helpers/inference.js'

// Raises, as Gemma's and Mistral's templates do, for a system message anywhere but first.
const STRICT = "{%- for message in messages -%}{%- if message.role == 'system' and not loop.first -%}{{ raise_exception('System messages are only allowed first') }}{%- endif -%}{{ '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}{%- endfor -%}{%- if add_generation_prompt -%}{{ '<|im_start|>assistant\\n' }}{%- endif -%}"

const server = sharedServer(async () => {
  const served = await serveRealisticModels(t, { 'acme/qwen': 'qwen25', 'acme/r1': 'r1' }, { default_options: { num_ctx: 2048, max_tokens: 2 } })
  const created = await post(`${served.url}/api/create`, { model: 'acme/strict', from: 'acme/qwen', template: STRICT, stream: false })
  if (created.status !== 200) throw new Error(`create answered ${created.status}: ${await created.text()}`)
  return served
})

const SYSTEM = 'You are a careful assistant.'
// Long beside the system prompt: a prompt that changed after the system prompt would share only a few tokens.
const ASK = `Here are my notes for the week, please keep them in mind: ${Array.from({ length: 40 }, (_, i) => `item ${i + 1} is about the ${['garden', 'budget', 'trip', 'report'][i % 4]}`).join(', ')}.`
const LATE = 'The user prefers short answers from now on.'

interface Turn { status: number, prompt: number, cached: number }

/** The first turn, then the second with the answer, a late system message and another question, on one surface. */
const SURFACES: Record<string, (url: string, model: string, second: boolean) => Promise<Turn>> = {
  'OpenAI chat': async (url, model, second) => {
    const messages = [{ role: 'system', content: SYSTEM }, { role: 'user', content: ASK }, ...(second ? [{ role: 'assistant', content: 'Noted.' }, { role: 'system', content: LATE }, { role: 'user', content: 'What is item 3 about?' }] : [])]
    const res = await post(`${url}/v1/chat/completions`, { model, messages })
    const body = await res.json() as any
    return { status: res.status, prompt: body.usage?.prompt_tokens, cached: body.usage?.prompt_tokens_details?.cached_tokens }
  },
  Responses: async (url, model, second) => {
    const input = [{ role: 'system', content: SYSTEM }, { role: 'user', content: ASK }, ...(second ? [{ role: 'assistant', content: 'Noted.' }, { role: 'system', content: LATE }, { role: 'user', content: 'What is item 3 about?' }] : [])]
    const res = await post(`${url}/v1/responses`, { model, input, store: false })
    const body = await res.json() as any
    return { status: res.status, prompt: body.usage?.input_tokens, cached: body.usage?.input_tokens_details?.cached_tokens }
  },
  'Anthropic Messages': async (url, model, second) => {
    const messages = [{ role: 'user', content: ASK }, ...(second ? [{ role: 'assistant', content: 'Noted.' }, { role: 'system', content: LATE }, { role: 'user', content: 'What is item 3 about?' }] : [])]
    const res = await post(`${url}/v1/messages`, { model, system: SYSTEM, messages, max_tokens: 2 })
    const body = await res.json() as any
    return { status: res.status, prompt: body.usage?.input_tokens + body.usage?.cache_read_input_tokens, cached: body.usage?.cache_read_input_tokens }
  },
}

for (const [model, placement] of [['acme/qwen', 'in place'], ['acme/r1', 'as user text'], ['acme/strict', 'as user text']]) {
  t.test(`${model}: a late system message goes ${placement}; the second turn reads the first from the cache, on each surface`, async (t) => {
    const { url } = await server()
    for (const [surface, send] of Object.entries(SURFACES)) {
      const first = await send(url, model!, false)
      const second = await send(url, model!, true)
      t.equal(second.status, 200, `${surface}: answered`)
      t.ok(second.cached >= 0.9 * first.prompt, `${surface}: ${second.cached} of ${second.prompt} prompt tokens from the cache (the first turn: ${first.prompt})`)
    }
    // Ollama's /api/chat says no cached count: the same conversation is answered, its late system message placed alike.
    const native = await post(`${url}/api/chat`, { model, stream: false, messages: [{ role: 'system', content: SYSTEM }, { role: 'user', content: ASK }, { role: 'assistant', content: 'Noted.' }, { role: 'system', content: LATE }, { role: 'user', content: 'What is item 3 about?' }], options: { num_predict: 2 } })
    t.equal(native.status, 200, `/api/chat: answered (${native.status === 200 ? '' : await native.text()})`)
  })
}

t.test('as user text, the late system message is the note a user message carrying it would be', async (t) => {
  const { url } = await server()
  const count = async (messages: unknown[]): Promise<number> => {
    const res = await post(`${url}/api/chat`, { model: 'acme/strict', stream: false, messages, options: { num_predict: 1 } })
    return (await res.json() as { prompt_eval_count: number }).prompt_eval_count
  }
  const opening = [{ role: 'system', content: SYSTEM }, { role: 'user', content: ASK }, { role: 'assistant', content: 'Noted.' }]
  t.equal(
    await count([...opening, { role: 'system', content: LATE }, { role: 'user', content: 'Next?' }]),
    await count([...opening, { role: 'user', content: `<system-reminder>\n${LATE}\n</system-reminder>` }, { role: 'user', content: 'Next?' }]),
  )
})
