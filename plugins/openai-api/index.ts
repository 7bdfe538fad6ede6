import fp from 'fastify-plugin'
import completions from './chat-completions.js'

/** The OpenAI inference surface: /v1/chat/completions, /v1/completions. (/v1/models is the store's.) */
export default fp(async (app) => {
  await app.register(completions)
}, { name: 'openai-api', dependencies: ['storage', 'scheduler'] })
