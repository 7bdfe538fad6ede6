import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { tokenCount } from '../../runtimes/index.js'
import { runWhole } from '../inference/whole-run.js'
import { RerankBody } from './schemas.js'

interface RuntimeRerank { results: Array<{ index: number, relevance_score: number }>, usage?: { prompt_tokens?: number, total_tokens?: number } }

/**
 * Reranking in Jina's and Cohere's shape (Open WebUI, LangChain, LlamaIndex): the documents scored against the
 * query by a reranker model, best first, `top_n` of them. Served at llama-server's own paths.
 */
const rerank: FastifyPluginAsyncTypebox = async (app) => {
  for (const path of ['/v1/rerank', '/v1/reranking']) {
    app.post(path, { config: { scope: 'infer' }, schema: { body: RerankBody } }, async (request, reply) => {
      const { body } = request
      const documents = body.documents.map((d) => typeof d === 'string' ? d : d.text)
      return runWhole(app.leases, request, reply, body, 'rerank', async (lease) => {
        const answer = await lease.endpoint.postJson<RuntimeRerank>('/v1/rerank', {
          query: body.query, documents, top_n: body.top_n ?? documents.length,
        }, lease.signal)
        const tokens = tokenCount(answer.usage?.prompt_tokens, 'usage.prompt_tokens') ?? 0
        lease.countTokens(tokens, 0)
        return {
          object: 'list',
          model: lease.model.name,
          results: answer.results.map((r) => ({
            index: r.index,
            relevance_score: r.relevance_score,
            ...(body.return_documents ? { document: { text: documents[r.index] } } : {}),
          })),
          usage: { prompt_tokens: tokens, total_tokens: tokens },
        }
      })
    })
  }
}

export default rerank
