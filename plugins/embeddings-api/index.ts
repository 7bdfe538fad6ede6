import fp from 'fastify-plugin'
import nativeEmbed from './native-embed.js'
import openAiEmbeddings from './openai-embeddings.js'
import rerank from './rerank.js'

/**
 * The model kinds beyond chat: embeddings in Ollama's shapes (/api/embed, /api/embeddings) and OpenAI's
 * (/v1/embeddings), and reranking (/v1/rerank, /v1/reranking). Error shapes follow the path, as everywhere.
 */
export default fp(async (app) => {
  await app.register(nativeEmbed)
  await app.register(openAiEmbeddings)
  await app.register(rerank)
}, { name: 'embeddings-api', dependencies: ['storage', 'scheduler', 'inference'] })
