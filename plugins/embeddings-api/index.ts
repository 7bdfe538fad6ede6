import fp from 'fastify-plugin'
import nativeEmbed from './native-embed.js'
import openAiEmbeddings from './openai-embeddings.js'
import rerank from './rerank.js'

/**
 * The model kinds beyond chat: embeddings in Ollama's shapes (/api/embed, /api/embeddings) and OpenAI's
 * (/v1/embeddings), and reranking (/v1/rerank, /v1/reranking). Error shapes follow the path, as everywhere.
 */
export default fp(async (app) => {
  // Embeddings and reranking on either API are one surface: counted together, errors in the path's shape.
  app.surfaces.register({ label: 'embeddings', paths: ['/api/embed', '/api/embeddings', '/v1/embeddings', '/v1/rerank*'] })
  await app.register(nativeEmbed)
  await app.register(openAiEmbeddings)
  await app.register(rerank)
}, { name: 'embeddings-api', dependencies: ['storage', 'upstreams', 'inference'] })
