import { tool } from '@langchain/core/tools'
import { ChatOllama, OllamaEmbeddings } from '@langchain/ollama'
import t from 'tap'
import { z } from 'zod'
import { serveRealisticModels } from '../../helpers/inference.js'
import { holdOllamaPort } from '../../helpers/ollama-port.js'

// LangChain's Ollama integration (@langchain/ollama, through the official ollama client, which sends
// `Accept: application/json`): NDJSON on either address, so both are tested: as it comes (no baseUrl: Ollama's
// address, 127.0.0.1:11434 for ChatOllama, localhost:11434 for OllamaEmbeddings), served by ollama_listen: auto, and
// the main address.

const MODELS = { 'acme/qwen': 'qwen25', 'acme/caller': 'caller', 'acme/bert': 'bert' } as const
// The text model writes until numPredict, so that the finish reason is known; the caller ends its turn itself.
const VALUES = { ollama_listen: 'auto', models: { 'acme/qwen': { options: { ignore_eos: true } } } }
const weather = tool(async () => 'sunny', {
  name: 'get_weather', description: 'The weather in a city', schema: z.object({ city: z.enum(['Paris', 'Tokyo']) }),
})

t.test('ChatOllama (invoke, stream, bindTools) and OllamaEmbeddings, as they come and on the main address', async (t) => {
  await holdOllamaPort(t)
  const { url } = await serveRealisticModels(t, MODELS, VALUES)
  for (const [where, baseUrl] of [['no baseUrl (Ollama\'s address)', undefined], ['main address', url]] as const) {
    const chat = new ChatOllama({ ...(baseUrl && { baseUrl }), model: 'acme/qwen', numPredict: 8, temperature: 0.2, seed: 1 })
    const answer = await chat.invoke('Say hello')
    t.ok(typeof answer.content === 'string' && answer.content.length > 0, `${where}: invoke answers ${JSON.stringify(answer.content)}`)
    t.match(answer.response_metadata, { done_reason: 'length' }, `${where}: the finish reason`)
    t.equal(answer.usage_metadata?.output_tokens, 8)

    const pieces: string[] = []
    for await (const chunk of await chat.stream('Say hello again')) pieces.push(String(chunk.content))
    t.ok(pieces.filter((p) => p !== '').length > 1, `${where}: stream gives the text in pieces`)
    t.ok(pieces.join('').length > 0)

    const caller = new ChatOllama({ ...(baseUrl && { baseUrl }), model: 'acme/caller', numPredict: 200, temperature: 0.2, seed: 2 }).bindTools([weather])
    const called = await caller.invoke('What is the weather in Paris?')
    t.equal(called.tool_calls?.length, 1, `${where}: calls ${JSON.stringify(called.tool_calls)}`)
    t.equal(called.tool_calls?.[0]?.name, 'get_weather')
    t.ok(['Paris', 'Tokyo'].includes(called.tool_calls?.[0]?.args.city as string), 'arguments as an object')

    const embeddings = new OllamaEmbeddings({ ...(baseUrl && { baseUrl }), model: 'acme/bert' })
    const vectors = await embeddings.embedDocuments(['the sky is blue', 'grass is green'])
    t.equal(vectors.length, 2, `${where}: embedDocuments`)
    t.ok(vectors.every((v) => v.length > 0 && v.every(Number.isFinite)))
    t.same(await embeddings.embedQuery('the sky is blue'), vectors[0], 'embedQuery: the same vector for the same text')
  }
})
