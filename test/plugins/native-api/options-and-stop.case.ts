import { join } from 'node:path'
import t, { type Test } from 'tap'
import { writeTinyGguf } from '../../../scripts/fixtures/tiny-model.js'
import { buildTestApp, tempDir, testConfig } from '../../helpers/app.js'
import { ndjsonEvents, post, serveRealisticModels, serveTinyModels, sharedServer, sseEvents } from '../../helpers/inference.js'
import { cpuRuntime } from '../../helpers/runtime.js'

// The sampling options docs/api.md lists for /api/chat and /api/generate (`stop`, `min_p`, `repeat_penalty`),
// `system` on /api/generate, `done_reason: "stop"` and native `tools`, checked for their effect on a tiny random-weight model:
// greedy decoding (temperature 0) is deterministic, so an option's effect shows as a defined change of the text.

type Answer = Record<string, any>
const LIMITS = { num_thread: 1, num_ctx: 512, num_parallel: 1, max_tokens: 48 }
// One gateway and llama-server at these limits for the tests that only send requests to acme/tiny.
const limited = sharedServer(() => serveTinyModels(t, ['acme/tiny'], { default_options: LIMITS }))

async function generate (url: string, body: Record<string, unknown>): Promise<Answer> {
  const res = await post(`${url}/api/generate`, { model: 'acme/tiny', prompt: 'hello world', stream: false, ...body })
  if (res.status !== 200) throw new Error(`/api/generate answered ${res.status}: ${await res.text()}`)
  return res.json() as Promise<Answer>
}

async function chat (url: string, body: Record<string, unknown>): Promise<Answer> {
  const res = await post(`${url}/api/chat`, { model: 'acme/tiny', messages: [{ role: 'user', content: 'hello world' }], stream: false, ...body })
  if (res.status !== 200) throw new Error(`/api/chat answered ${res.status}: ${await res.text()}`)
  return res.json() as Promise<Answer>
}

/** The streamed text of a native SSE stream and its final event. */
async function streamed (res: Response, key: 'response' | 'message'): Promise<{ text: string, last: Answer }> {
  if (res.status !== 200) throw new Error(`stream answered ${res.status}: ${await res.text()}`)
  const events = await sseEvents(res) as Answer[]
  const text = events.filter((e) => !e.done).map((e) => key === 'response' ? e.response : e.message.content).join('')
  return { text, last: events.at(-1)! }
}

/** A word of the text (4+ ASCII letters) whose first occurrence is at least `from` characters in. */
function wordIn (text: string, from = 8): { word: string, at: number } {
  for (const match of text.matchAll(/[A-Za-z]{4,}/g)) {
    if (match.index! >= from && text.indexOf(match[0]) === match.index) return { word: match[0], at: match.index! }
  }
  throw new Error(`no word of 4+ letters at ${from} or later in ${JSON.stringify(text)}: pick another prompt`)
}

const greedy = { temperature: 0, seed: 1 }

t.test('stop: greedy text ends right before the stop string, done_reason "stop"; on generate and chat, streamed and not', async (t) => {
  const { url } = await limited()
  // generate, a stop string
  const base = await generate(url, { options: greedy })
  t.equal(base.done_reason, 'length', 'without stop: the whole max_tokens, done_reason "length"')
  t.equal(base.eval_count, 48)
  const { word, at } = wordIn(base.response)
  const stopped = await generate(url, { options: { ...greedy, stop: word } })
  t.equal(stopped.response, base.response.slice(0, at), `generate: cut right before ${JSON.stringify(word)}`)
  t.equal(stopped.done_reason, 'stop', 'generate: done_reason "stop"')
  t.ok(stopped.eval_count < 48, `generate: fewer tokens (${stopped.eval_count})`)
  const stream = await streamed(await post(`${url}/api/generate`, { model: 'acme/tiny', prompt: 'hello world', options: { ...greedy, stop: word } }), 'response')
  t.equal(stream.text, base.response.slice(0, at), 'generate streamed: the fragments add up to the same cut text')
  t.equal(stream.last.done_reason, 'stop', 'generate streamed: the final event says "stop"')

  // chat, a list of stop strings (one that never occurs)
  const chatBase = await chat(url, { options: greedy })
  t.equal(chatBase.done_reason, 'length')
  const chatWord = wordIn(chatBase.message.content)
  const chatStopped = await chat(url, { options: { ...greedy, stop: ['@@never@@', chatWord.word] } })
  t.equal(chatStopped.message.content, chatBase.message.content.slice(0, chatWord.at), `chat: cut right before ${JSON.stringify(chatWord.word)}`)
  t.equal(chatStopped.done_reason, 'stop', 'chat: done_reason "stop"')
  const chatStream = await streamed(await post(`${url}/api/chat`, { model: 'acme/tiny', messages: [{ role: 'user', content: 'hello world' }], options: { ...greedy, stop: [chatWord.word] } }), 'message')
  t.equal(chatStream.text, chatBase.message.content.slice(0, chatWord.at), 'chat streamed: the same cut text')
  t.equal(chatStream.last.done_reason, 'stop', 'chat streamed: the final event says "stop"')
})

t.test('/api/generate system: the same prompt as a chat with that system message; a created model\'s system gives way to it', async (t) => {
  const { url } = await limited()
  const system = 'You answer in French, briefly.'
  const withSystem = await generate(url, { system, options: greedy })
  const asChat = await chat(url, { messages: [{ role: 'system', content: system }, { role: 'user', content: 'hello world' }], options: greedy })
  const without = await generate(url, { options: greedy })
  t.equal(withSystem.prompt_eval_count, asChat.prompt_eval_count, `the same prompt tokens as chat with a system message (${asChat.prompt_eval_count})`)
  t.equal(withSystem.response, asChat.message.content, 'and the same greedy answer')
  t.ok(withSystem.prompt_eval_count > without.prompt_eval_count + 5, `the system message is in the prompt: ${without.prompt_eval_count} -> ${withSystem.prompt_eval_count} tokens`)
  t.not(withSystem.response, without.response, 'and changes the answer')
  const stream = await streamed(await post(`${url}/api/generate`, { model: 'acme/tiny', prompt: 'hello world', system, options: greedy }), 'response')
  t.equal(stream.text, withSystem.response, 'streamed: the same answer')
  t.equal(stream.last.prompt_eval_count, withSystem.prompt_eval_count)

  // A model created with its own system prompt: used when the request has none, replaced by the request's.
  const created = await post(`${url}/api/create`, { model: 'me/french', from: 'acme/tiny', system, stream: false })
  t.equal(created.status, 200, 'created')
  const own = await generate(url, { model: 'me/french', options: greedy })
  t.equal(own.prompt_eval_count, withSystem.prompt_eval_count, 'the created model\'s system prompt is used when the request has none')
  t.equal(own.response, withSystem.response)
  const other = 'Reply in one word.'
  const replaced = await generate(url, { model: 'me/french', system: other, options: greedy })
  const reference = await generate(url, { system: other, options: greedy })
  t.equal(replaced.prompt_eval_count, reference.prompt_eval_count, 'the request\'s system replaces the model\'s (not added to it)')
  t.equal(replaced.response, reference.response)
})

t.test('min_p reaches the sampler: min_p 1 keeps only the likeliest token, so hot sampling becomes greedy', async (t) => {
  const { url } = await limited()
  const cold = (await generate(url, { options: greedy })).response
  const hot = { temperature: 1.5, seed: 7 }
  const sampled = (await generate(url, { options: hot })).response
  t.not(sampled, cold, 'at temperature 1.5 the text is not the greedy one')
  // (llama-server's own default is min_p 0.05, so min_p 0 is a change too: the text is still not greedy)
  t.not((await generate(url, { options: { ...hot, min_p: 0 } })).response, cold, 'min_p 0 (off): still not the greedy text')
  t.equal((await generate(url, { options: { ...hot, min_p: 1 } })).response, cold, 'min_p 1 on generate: the greedy text')
  const chatCold = (await chat(url, { options: greedy })).message.content
  t.equal((await chat(url, { options: { ...hot, min_p: 1 } })).message.content, chatCold, 'min_p 1 on chat: the greedy text')
  t.not((await chat(url, { options: hot })).message.content, chatCold, 'and without it, not')
})

t.test('repeat_penalty reaches the sampler: greedy text changes where it would repeat itself; repeat_last_n 0 turns it off', async (t) => {
  const { url } = await limited()
  const plain = (await generate(url, { options: greedy })).response as string
  const penalized = (await generate(url, { options: { ...greedy, repeat_penalty: 100 } })).response as string
  t.not(penalized, plain, 'a strong repeat_penalty changes the greedy text')
  let same = 0
  while (same < plain.length && plain[same] === penalized[same]) same++
  t.ok(same > 0, `both begin alike (${same} characters): the penalty only bites on a repeat`)
  t.ok(plain.slice(0, same).includes(plain.slice(same, same + 3)), `where they part, the unpenalized text repeats itself: ${JSON.stringify(plain.slice(same, same + 3))} appeared before in ${JSON.stringify(plain.slice(0, same))}`)
  t.equal((await generate(url, { options: { ...greedy, repeat_penalty: 1 } })).response, plain, 'repeat_penalty 1 (neutral): the plain text')
  t.equal((await generate(url, { options: { ...greedy, repeat_penalty: 100, repeat_last_n: 0 } })).response, plain, 'repeat_last_n 0 (no window): the plain text')
})

t.test('llama-server\'s own account of the sampling it used (its `verbose` echo on /v1/completions): options min_p, repeat_penalty, stop', async (t) => {
  const { url } = await limited()
  const settings = async (body: Record<string, unknown>): Promise<Answer> => {
    const res = await post(`${url}/v1/completions`, { model: 'acme/tiny', prompt: 'hello', max_tokens: 3, verbose: true, ...body })
    t.equal(res.status, 200)
    const answer = await res.json() as Answer
    if (!answer.__verbose?.generation_settings) throw new Error(`llama-server did not echo its settings: ${JSON.stringify(answer).slice(0, 300)}`)
    return answer.__verbose.generation_settings
  }
  const used = await settings({ options: { min_p: 0.37, repeat_penalty: 1.7, repeat_last_n: 33, stop: ['zq'] } })
  t.ok(Math.abs(used.min_p - 0.37) < 1e-6, `min_p ${used.min_p}`)
  t.ok(Math.abs(used.repeat_penalty - 1.7) < 1e-6, `repeat_penalty ${used.repeat_penalty}`)
  t.equal(used.repeat_last_n, 33)
  t.same(used.stop, ['zq'])
  t.equal(used.n_predict, 3, 'the top-level max_tokens')
  const topLevel = await settings({ stop: ['yq'], options: { stop: ['zq'] } })
  t.same(topLevel.stop, ['yq'], 'a top-level stop wins over options.stop')
})

t.test('done_reason "stop" when the model ends on its own (end-of-sequence, no ignore_eos anywhere), "length" when cut', async (t) => {
  // serveTinyModels sets ignore_eos for every request; this server does not.
  const runtime = await cpuRuntime()
  const files = await tempDir(t, 'llamagate-models-')
  const app = await buildTestApp(await testConfig(t, { runtime: 'cpu', runtimes: { cpu: { bin: runtime.binDir } }, default_options: { ...LIMITS, max_tokens: 300 } }))
  t.teardown(() => app.close())
  await writeTinyGguf({ file: join(files, 'tiny.gguf'), seed: 1, name: 'acme/tiny' })
  await app.store.import('acme/tiny', join(files, 'tiny.gguf'))
  const url = await app.listen({ host: '127.0.0.1', port: 0 })
  // A random-weight model with a 560-token vocabulary samples its end-of-sequence token within 300 tokens for
  // most seeds at temperature 1; the seeds make it reproducible.
  const seen: string[] = []
  let ended: Answer | null = null
  for (let seed = 1; seed <= 12 && ended === null; seed++) {
    const answer = await generate(url, { options: { temperature: 1, seed } })
    seen.push(`seed ${seed}: ${answer.eval_count} tokens, ${answer.done_reason}`)
    t.equal(answer.done_reason, answer.eval_count < 300 ? 'stop' : 'length', `seed ${seed}: done_reason fits the token count (${answer.eval_count})`)
    if (answer.eval_count < 300) ended = answer
  }
  t.ok(ended, `a generation ended on its own before max_tokens (${seen.join('; ')})`)
  let streamEnded: Answer | null = null
  for (let seed = 1; seed <= 12 && streamEnded === null; seed++) {
    const { last } = await streamed(await post(`${url}/api/chat`, { model: 'acme/tiny', messages: [{ role: 'user', content: 'hi' }], options: { temperature: 1, seed } }), 'message')
    t.equal(last.done_reason, last.eval_count < 300 ? 'stop' : 'length', `chat streamed, seed ${seed}: done_reason fits the token count (${last.eval_count})`)
    if (last.eval_count < 300) streamEnded = last
  }
  t.ok(streamEnded, 'a streamed chat ended on its own with done_reason "stop"')
})

t.test('tools on /api/chat: each tool\'s definition is rendered into the prompt, streamed (SSE, NDJSON) and not', async (t) => {
  // Qwen2.5's real template on random weights: the model calls nothing, but the prompt shows what reached the template.
  const { url } = await serveRealisticModels(t, { 'acme/qwen': 'qwen25' }, { default_options: { num_thread: 1, num_ctx: 1024, max_tokens: 1 } })
  const messages = [{ role: 'user', content: 'What is the weather in Paris?' }]
  const tool = (name: string, description: string): Record<string, unknown> => ({
    type: 'function',
    function: { name, description, parameters: { type: 'object', properties: { city: { type: 'string', description: 'the city' } }, required: ['city'] } },
  })
  const weather = tool('get_weather', 'The weather in a city')
  const longer = tool('get_weather', 'The weather in a city, as reported by the nearest station: temperature, wind, rain and the sky, for today and the next three days')
  const time = tool('get_time', 'The local time in a city')
  const prompt = async (tools?: unknown[]): Promise<number> => {
    const res = await post(`${url}/api/chat`, { model: 'acme/qwen', messages, stream: false, ...(tools ? { tools } : {}) })
    t.equal(res.status, 200)
    return (await res.json() as Answer).prompt_eval_count
  }
  const none = await prompt()
  const one = await prompt([weather])
  const described = await prompt([longer])
  const two = await prompt([weather, time])
  t.ok(one > none + 40, `one tool: ${none} -> ${one} prompt tokens`)
  t.ok(described > one + 15, `a longer description: ${one} -> ${described} tokens (the tool's own text is in the prompt)`)
  t.ok(two > one + 20, `a second tool: ${one} -> ${two} tokens`)
  const sse = await post(`${url}/api/chat`, { model: 'acme/qwen', messages, tools: [weather, time] })
  t.match(sse.headers.get('content-type'), /text\/event-stream/)
  const sseLast = (await sseEvents(sse) as Answer[]).at(-1)!
  t.equal(sseLast.done, true)
  t.equal(sseLast.prompt_eval_count, two, 'streamed SSE: the same prompt with both tools')
  const nd = await post(`${url}/api/chat`, { model: 'acme/qwen', messages, tools: [weather, time] }, { accept: 'application/x-ndjson' })
  t.match(nd.headers.get('content-type'), /application\/x-ndjson/)
  const ndLast = (await ndjsonEvents(nd) as Answer[]).at(-1)!
  t.equal(ndLast.done, true)
  t.equal(ndLast.prompt_eval_count, two, 'streamed NDJSON: the same prompt with both tools')
  t.same(ndLast.message, { role: 'assistant', content: '' }, 'Ollama\'s final NDJSON chunk: an empty message, no tool_calls (none were made)')
})

t.test('num_predict is max_tokens on every surface and in every layer: config.yaml defaults, models.<name>.options, the request', async (t) => {
  // A generation must run to its limit, so the count of tokens generated is the limit that applied. ignore_eos does that
  // on llama-server's OpenAI and native routes but its /v1/messages drops the field (1 answer in ~100 ended early at
  // temperature 1); greedy decoding makes every surface's answer the same run of tokens that does not end by itself.
  const { url } = await serveTinyModels(t, ['acme/tiny', 'acme/capped'], {
    default_options: { ...LIMITS, max_tokens: undefined, num_predict: 5, ignore_eos: true, temperature: 0 },
    models: { 'acme/capped': { options: { num_predict: 6 } } },
  })
  const openAi = async (body: Record<string, unknown>): Promise<number> => {
    const res = await post(`${url}/v1/chat/completions`, { model: 'acme/tiny', messages: [{ role: 'user', content: 'hi' }], ...body })
    t.equal(res.status, 200)
    return ((await res.json()) as Answer).usage.completion_tokens
  }
  const anthropic = async (body: Record<string, unknown>): Promise<number> => {
    const res = await post(`${url}/v1/messages`, { model: 'acme/tiny', messages: [{ role: 'user', content: 'hi' }], ...body })
    t.equal(res.status, 200)
    return ((await res.json()) as Answer).usage.output_tokens
  }
  t.equal(await openAi({}), 5, '/v1/chat/completions: config.yaml default_options.num_predict')
  t.equal(await openAi({ options: { num_predict: 3 } }), 3, '/v1/chat/completions: options.num_predict')
  t.equal(await openAi({ options: { num_predict: 3 }, max_tokens: 4 }), 4, '/v1/chat/completions: the top-level max_tokens wins over options')
  t.equal(await openAi({ model: 'acme/capped' }), 6, '/v1/chat/completions: models.<name>.options.num_predict over the defaults')
  t.equal(await openAi({ model: 'acme/capped', options: { num_predict: 2 } }), 2, '/v1/chat/completions: the request over models.<name>.options')
  t.equal(await anthropic({}), 5, '/v1/messages: config.yaml default_options.num_predict')
  t.equal(await anthropic({ options: { num_predict: 3 } }), 3, '/v1/messages: options.num_predict')
  t.equal(await anthropic({ model: 'acme/capped' }), 6, '/v1/messages: models.<name>.options.num_predict')
  t.equal(await anthropic({ options: { num_predict: 3 }, max_tokens: 2 }), 2, '/v1/messages: the top-level max_tokens wins over options')
  t.equal((await chat(url, { model: 'acme/capped' })).eval_count, 6, '/api/chat: models.<name>.options.num_predict')
  t.equal((await generate(url, {})).eval_count, 5, '/api/generate: config.yaml default_options.num_predict')
})
