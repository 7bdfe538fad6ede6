import fp from 'fastify-plugin'
import routes from './routes.js'

export default fp(async (app) => {
  await app.register(routes)
}, { name: 'models-api', dependencies: ['storage'] })
