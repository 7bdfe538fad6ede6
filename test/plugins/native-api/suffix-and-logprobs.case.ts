import { Ollama } from 'ollama'
import t from 'tap'
import { fimTokensOf } from '../../../plugins/inference/fim-tokens.js'
import { ndjsonEvents, post, serveRealisticModels, sharedServer } from '../../helpers/inference.js'

// One gateway for the file: acme/coder (Qwen2.5-Coder's vocabulary with its FIM tokens, steered to fill any gap
// with " return"), and acme/qwen (Qwen2.5's, without them; never loaded: the 400 comes first).
const served = sharedServer(() => serveRealisticModels(t, { 'acme/coder': 'coder', 'acme/qwen': 'qwen25' }))
const GREEDY = { temperature: 0, seed: 1 }
const BEFORE = 'def add(a, b):\n    '
const AFTER = ' a + b\n\nprint(add(1, 2))\n'

type Answer = Record<string, any>

t.test('suffix: the gap filled through the model\'s FIM tokens, whole and streamed, through the official client', async (t) => {
  const { url } = await served()
  const ollama = new Ollama({ host: url })
  const whole = await ollama.generate({ model: 'acme/coder', prompt: BEFORE, suffix: AFTER, options: GREEDY })
  t.equal(whole.response, ' return', 'the token the model says after <|fim_middle|>: the prompt ended with it')
  t.equal(whole.done_reason, 'stop')
  t.ok(whole.prompt_eval_count > 6, `the prefix, the suffix and their markers were evaluated (${whole.prompt_eval_count} tokens)`)
  let streamed = ''
  for await (const part of await ollama.generate({ model: 'acme/coder', prompt: BEFORE, suffix: AFTER, stream: true, options: GREEDY })) streamed += part.response
  t.equal(streamed, ' return', 'streamed, the same')
  // Without a suffix the same prompt goes through the chat template, which ends elsewhere.
  const chat = await ollama.generate({ model: 'acme/coder', prompt: BEFORE, options: { ...GREEDY, num_predict: 3 } })
  t.not(chat.response, ' return', `without a suffix, no FIM frame: ${JSON.stringify(chat.response)}`)
})

t.test('suffix on a model without FIM tokens, or with images: 400 in Ollama\'s shape', async (t) => {
  const { url } = await served()
  for (const raw of [false, true]) {
    const res = await post(`${url}/api/generate`, { model: 'acme/qwen', prompt: BEFORE, suffix: AFTER, raw, stream: false })
    t.equal(res.status, 400, `raw ${raw}: 400`)
    t.same(await res.json(), { error: 'acme/qwen does not support insert: its vocabulary has no fill-in-the-middle tokens (prefix, suffix and middle)' }, 'Ollama\'s words, and why')
  }
  const images = await post(`${url}/api/generate`, { model: 'acme/coder', prompt: BEFORE, suffix: AFTER, images: ['iVBORw0KGgo='], stream: false })
  t.equal(images.status, 400)
  t.match(await images.json(), { error: /does not support images|do not go with "suffix"/ })
})

t.test('fimTokensOf: the GGUF keys, else the token texts llama.cpp looks for; all three or none', async (t) => {
  t.same(fimTokensOf({ 'tokenizer.ggml.fim_pre_token_id': 7, 'tokenizer.ggml.fim_suf_token_id': 8, 'tokenizer.ggml.fim_mid_token_id': 9n }), { prefix: 7, suffix: 8, middle: 9 }, 'by key')
  t.same(fimTokensOf({ 'tokenizer.ggml.tokens': ['a', '▁<PRE>', '▁<SUF>', '▁<MID>'] }), { prefix: 1, suffix: 2, middle: 3 }, 'CodeLlama\'s, by text')
  t.same(fimTokensOf({ 'tokenizer.ggml.prefix_token_id': 5, 'tokenizer.ggml.tokens': ['<fim_prefix>', '<fim_suffix>', '<fim_middle>'] }), { prefix: 5, suffix: 1, middle: 2 }, 'a key wins over a text')
  t.equal(fimTokensOf({ 'tokenizer.ggml.tokens': ['<|fim_prefix|>', '<|fim_suffix|>'] }), null, 'no middle: none')
  t.equal(fimTokensOf({}), null)
})

t.test('logprobs on /api/chat and /api/generate: Ollama\'s shape, whole and streamed, top_logprobs when asked', async (t) => {
  const { url } = await served()
  const ollama = new Ollama({ host: url })
  const chat = await ollama.chat({ model: 'acme/coder', messages: [{ role: 'user', content: 'hi' }], logprobs: true, top_logprobs: 3, options: { ...GREEDY, num_predict: 4, ignore_eos: true } as object })
  t.equal(chat.done_reason, 'length', 'held to the limit (ignore_eos): a random-weight model may end its turn at any token')
  t.equal(chat.logprobs?.length, chat.eval_count, 'one per generated token')
  for (const p of chat.logprobs ?? []) {
    t.ok(typeof p.token === 'string' && p.logprob <= 0 && Array.isArray((p as { bytes?: unknown }).bytes), `a token, its log probability and bytes: ${JSON.stringify(p.token)}`)
    t.equal(p.top_logprobs?.length, 3, 'three alternatives')
    t.equal(p.top_logprobs![0]!.logprob, p.logprob, 'greedy: the token taken is the likeliest')
  }
  // The raw prompt's text is the tokens' bytes, exactly; streamed, each event carries its own tokens'.
  const raw = await post(`${url}/api/generate`, { model: 'acme/coder', prompt: BEFORE, raw: true, logprobs: true, options: { ...GREEDY, num_predict: 4 } }, { accept: 'application/x-ndjson' })
  const events = await ndjsonEvents(raw) as Answer[]
  const text = events.map((e) => e.response).join('')
  const probs = events.flatMap((e) => e.logprobs ?? [])
  t.equal(probs.length, events.at(-1)!.eval_count, 'streamed: one per token')
  t.equal(Buffer.from(probs.flatMap((p: Answer) => p.bytes)).toString('utf8'), text, 'the tokens\' bytes are the text')
  t.notOk(probs.some((p: Answer) => 'top_logprobs' in p), 'top_logprobs 0: no alternatives')
  const fim = await post(`${url}/api/generate`, { model: 'acme/coder', prompt: BEFORE, suffix: AFTER, stream: false, logprobs: true, top_logprobs: 1, options: GREEDY })
  const filled = await fim.json() as Answer
  t.match(filled.logprobs[0], { token: ' return', top_logprobs: [{ token: ' return' }] }, 'the filled gap\'s token, the likeliest')
  const none = await post(`${url}/api/generate`, { model: 'acme/coder', prompt: BEFORE, stream: false, top_logprobs: 5, options: { ...GREEDY, num_predict: 1 } })
  t.notOk('logprobs' in (await none.json() as Answer), 'top_logprobs without logprobs asks for nothing, as in Ollama')
})

t.test('bad logprobs values: 400 in Ollama\'s words', async (t) => {
  const { url } = await served()
  for (const path of ['/api/chat', '/api/generate']) {
    const base = path === '/api/chat' ? { messages: [{ role: 'user', content: 'hi' }] } : { prompt: 'hi' }
    for (const top of [-1, 21]) {
      const res = await post(`${url}${path}`, { model: 'acme/coder', stream: false, logprobs: true, top_logprobs: top, ...base })
      t.equal(res.status, 400, `${path} top_logprobs ${top}: 400`)
      t.same(await res.json(), { error: 'top_logprobs must be between 0 and 20' })
    }
    const typed = await post(`${url}${path}`, { model: 'acme/coder', stream: false, logprobs: 'yes', ...base })
    t.equal(typed.status, 400, `${path} logprobs of another type: 400`)
    t.match(await typed.json(), { error: /logprobs/ })
  }
})
