import t from 'tap'
import { post, serveRealisticModels } from '../../helpers/inference.js'

const DOCUMENTS = ['The quick brown fox jumps over the lazy dog', 'A recipe for bread', 'Foxes are small omnivores', 'Tax law in 1850']

t.test('/v1/rerank orders documents by relevance and honours top_n; /v1/reranking is the same', async (t) => {
  const { url } = await serveRealisticModels(t, { 'acme/rerank': 'reranker' })
  const res = await post(`${url}/v1/rerank`, { model: 'acme/rerank', query: 'what do foxes eat?', documents: DOCUMENTS })
  t.equal(res.status, 200)
  const all = await res.json() as any
  t.equal(all.model, 'acme/rerank')
  t.equal(all.object, 'list')
  t.same(all.results.map((r: any) => r.index).sort(), [0, 1, 2, 3], 'every document, once')
  const scores = all.results.map((r: any) => r.relevance_score)
  t.ok(scores.every((s: unknown) => typeof s === 'number' && Number.isFinite(s)), 'finite scores')
  t.same(scores, [...scores].sort((a: number, b: number) => b - a), 'best first')
  t.ok(new Set(scores).size > 1, 'the documents are told apart')
  t.ok(all.usage.prompt_tokens > 0, 'usage counts the pairs\' tokens')

  const top = await (await post(`${url}/v1/rerank`, { model: 'acme/rerank', query: 'what do foxes eat?', documents: DOCUMENTS, top_n: 2 })).json() as any
  t.same(top.results, all.results.slice(0, 2), 'top_n: the best two, as in the whole ranking')
  const alias = await (await post(`${url}/v1/reranking`, { model: 'acme/rerank', query: 'what do foxes eat?', documents: DOCUMENTS })).json() as any
  t.same(alias.results, all.results, '/v1/reranking answers the same')
  const objects = await (await post(`${url}/v1/rerank`, { model: 'acme/rerank', query: 'what do foxes eat?', documents: DOCUMENTS.map((text) => ({ text })), top_n: 1, return_documents: true })).json() as any
  t.same(objects.results, [{ ...all.results[0], document: { text: DOCUMENTS[all.results[0].index] } }], 'Cohere\'s {text} documents, and return_documents')
})

t.test('bad rerank requests: 4xx in OpenAI\'s shape', async (t) => {
  const { url } = await serveRealisticModels(t, { 'acme/rerank': 'reranker' })
  const cases: Array<[string, unknown, number, RegExp]> = [
    ['no documents', { model: 'acme/rerank', query: 'q', documents: [] }, 400, /documents/],
    ['no query', { model: 'acme/rerank', documents: ['a'] }, 400, /query/],
    ['an empty query', { model: 'acme/rerank', query: '', documents: ['a'] }, 400, /query/],
    ['a number as document', { model: 'acme/rerank', query: 'q', documents: [1] }, 400, /documents/],
    ['top_n of 0', { model: 'acme/rerank', query: 'q', documents: ['a'], top_n: 0 }, 400, /top_n/],
    ['an unknown model', { model: 'acme/nope', query: 'q', documents: ['a'] }, 404, /not found/],
    ['chat with a reranker', null, 400, /"acme\/rerank" does not support chat or generate: it is a reranker; use \/v1\/rerank/],
  ]
  for (const [what, body, status, message] of cases) {
    const res = body === null
      ? await post(`${url}/v1/chat/completions`, { model: 'acme/rerank', messages: [{ role: 'user', content: 'hi' }] })
      : await post(`${url}/v1/rerank`, body)
    t.equal(res.status, status, `${what}: ${status}`)
    t.match(await res.json(), { error: { message } }, `${what}: says why`)
  }
})
