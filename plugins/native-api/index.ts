import fp from 'fastify-plugin'
import chat from './chat.js'
import generate from './generate.js'
import ps from './ps.js'

/** The native inference surface: /api/chat, /api/generate, /api/ps, /api/stop. */
export default fp(async (app) => {
  // Ollama's shapes are the contract's default: every /api path not claimed by another surface is counted as native.
  app.surfaces.register({ label: 'native', paths: ['/api/*'] })
  await app.register(chat)
  await app.register(generate)
  await app.register(ps)
}, { name: 'native-api', dependencies: ['storage', 'llama-cpp', 'scheduler', 'upstreams', 'call-hooks', 'inference'] })
