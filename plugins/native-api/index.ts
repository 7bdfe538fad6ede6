import fp from 'fastify-plugin'
import chat from './chat.js'
import generate from './generate.js'
import ps from './ps.js'

/** The native inference surface: /api/chat, /api/generate, /api/ps, /api/stop. */
export default fp(async (app) => {
  await app.register(chat)
  await app.register(generate)
  await app.register(ps)
}, { name: 'native-api', dependencies: ['storage', 'runtimes', 'scheduler', 'inference'] })
