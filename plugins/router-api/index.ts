import fp from 'fastify-plugin'
import { ROUTER_SURFACE } from './error-shape.js'
import routerModels from './router-models.js'

/** llama-server's router-mode paths (/models, /models/load, /models/unload, /props), on the store and scheduler. */
export default fp(async (app) => {
  app.surfaces.register(ROUTER_SURFACE)
  await app.register(routerModels)
}, { name: 'router-api', dependencies: ['storage', 'scheduler', 'models-api'] })
