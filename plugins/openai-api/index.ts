import fp from 'fastify-plugin'
import chatCompletions from './chat-completions.js'
import completions from './completions.js'
import { OPENAI_SURFACE } from './error-shape.js'
import responses from './responses.js'

/** The OpenAI inference surface: /v1/chat/completions, /v1/completions, /v1/responses. (/v1/models is the store's.) */
export default fp(async (app) => {
  app.surfaces.register(OPENAI_SURFACE)
  await app.register(chatCompletions)
  await app.register(completions)
  await app.register(responses)
}, { name: 'openai-api', dependencies: ['storage', 'upstreams', 'call-hooks', 'inference'] })
