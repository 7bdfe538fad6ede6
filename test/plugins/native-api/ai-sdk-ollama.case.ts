import { embed, embedMany, generateText, streamText, tool } from 'ai'
import { createOllama, ollama } from 'ollama-ai-provider-v2'
import t from 'tap'
import { z } from 'zod'
import { serveRealisticModels } from '../../helpers/inference.js'
import { holdOllamaPort } from '../../helpers/ollama-port.js'

// The AI SDK's Ollama provider (ollama-ai-provider-v2, the community provider the AI SDK's docs list) reads native
// streams as NDJSON without asking for them: it sends `Accept: */*`. At Ollama's address (ollama_listen: auto, where
// its default instance looks) that is what it gets; on the main address `*/*` gets the spec's SSE, which the provider
// cannot read (the last test keeps that on record: it is why the second address exists).

const MODELS = { 'acme/qwen': 'qwen25', 'acme/caller': 'caller', 'acme/bert': 'bert' } as const
// The text model writes until num_predict, so that the finish reason is known; the caller ends its turn itself.
const MODEL_VALUES = { models: { 'acme/qwen': { options: { ignore_eos: true } } } }
const options = (extra: Record<string, number>) => ({ ollama: { options: { temperature: 0.2, ...extra } } })
const weather = tool({ description: 'The weather in a city', inputSchema: z.object({ city: z.enum(['Paris', 'Tokyo']) }) })

// One gateway for both tests: on Ollama's address (auto) and its main one.
t.test('the AI SDK\'s Ollama provider', async (t) => {
  await holdOllamaPort(t)
  const { url } = await serveRealisticModels(t, MODELS, { ...MODEL_VALUES, ollama_listen: 'auto' })
  await t.test('as it comes (no baseURL), at Ollama\'s address: streamText and generateText, a tool call, embed', async (t) => {
    const streamed = streamText({ model: ollama('acme/qwen'), prompt: 'Say hello', providerOptions: options({ num_predict: 12, seed: 1 }) })
    const deltas: string[] = []
    for await (const delta of streamed.textStream) deltas.push(delta)
    t.ok(deltas.length > 1, `the text came in ${deltas.length} pieces`)
    t.equal(await streamed.text, deltas.join(''), 'assembled')
    t.ok((await streamed.text).length > 0)
    t.equal(await streamed.finishReason, 'length')
    t.equal((await streamed.usage).outputTokens, 12, 'the usage of the last event')

    const whole = await generateText({ model: ollama('acme/qwen'), prompt: 'Say hello', providerOptions: options({ num_predict: 8, seed: 2 }) })
    t.ok(whole.text.length > 0, `text: ${JSON.stringify(whole.text)}`)
    t.equal(whole.finishReason, 'length')
    t.equal(whole.usage.outputTokens, 8)

    const called = await generateText({ model: ollama('acme/caller'), prompt: 'What is the weather in Paris?', tools: { get_weather: weather }, providerOptions: options({ num_predict: 200, seed: 3 }) })
    t.equal(called.finishReason, 'tool-calls')
    t.equal(called.toolCalls.length, 1, `calls: ${JSON.stringify(called.toolCalls)}`)
    t.equal(called.toolCalls[0]?.toolName, 'get_weather')
    t.ok(['Paris', 'Tokyo'].includes((called.toolCalls[0]?.input as { city: string }).city), 'its input checked against the tool\'s schema')

    const streamedCall = streamText({ model: ollama('acme/caller'), prompt: 'And in Tokyo?', tools: { get_weather: weather }, providerOptions: options({ num_predict: 200, seed: 4 }) })
    const parts = []
    for await (const part of streamedCall.fullStream) parts.push(part)
    const calls = parts.filter((p) => p.type === 'tool-call')
    t.equal(calls.length, 1, 'streamed: one tool-call part')
    t.equal(calls[0]?.type === 'tool-call' ? calls[0].toolName : null, 'get_weather')
    t.equal(await streamedCall.finishReason, 'tool-calls')

    const { embedding } = await embed({ model: ollama.embedding('acme/bert'), value: 'the sky is blue' })
    t.ok(embedding.length > 0 && embedding.every(Number.isFinite), `a vector of ${embedding.length}`)
    const { embeddings } = await embedMany({ model: ollama.embedding('acme/bert'), values: ['the sky is blue', 'grass is green'] })
    t.equal(embeddings.length, 2)
    t.same(embeddings[0], embedding, 'the same text, the same vector')
    t.notSame(embeddings[1], embedding)
  })

  await t.test('on the main address: whole answers work, streams come back empty (SSE read as NDJSON)', async (t) => {
    const main = createOllama({ baseURL: `${url}/api` })
    const whole = await generateText({ model: main('acme/qwen'), prompt: 'Say hello', providerOptions: options({ num_predict: 8, seed: 2 }) })
    t.equal(whole.finishReason, 'length', 'a whole answer is JSON on either address')
    t.ok((await embed({ model: main.embedding('acme/bert'), value: 'the sky is blue' })).embedding.length > 0, 'so is embed')

    // The provider drops every line it cannot parse as JSON with a console warning: each `data: {...}` line.
    const warnings: unknown[][] = []
    const warn = console.warn
    console.warn = (...args: unknown[]) => { warnings.push(args) }
    t.teardown(() => { console.warn = warn })
    const streamed = streamText({ model: main('acme/qwen'), prompt: 'Say hello', providerOptions: options({ num_predict: 12, seed: 1 }) })
    const deltas: string[] = []
    for await (const delta of streamed.textStream) deltas.push(delta)
    console.warn = warn
    t.same(deltas, [], 'no text')
    t.equal(await streamed.finishReason, 'other', 'and no finish reason')
    t.ok(warnings.length >= 12, `${warnings.length} "Failed to parse NDJSON line" warnings, one per SSE event`)
    t.match(String(warnings[0]?.[0]), /Failed to parse NDJSON line/)
  })
})
