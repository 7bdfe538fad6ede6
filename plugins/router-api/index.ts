import fp from 'fastify-plugin'
import { ROUTER_SURFACE } from './error-shape.js'
import routerModels from './router-models.js'
import runtimeRoutes from './runtime-routes.js'

/**
 * llama-server's router-mode paths (/models, /models/load, /models/unload, /props) on the store and scheduler, and its
 * own routes with a model named (/tokenize, /detokenize, /apply-template, /infill).
 */
export default fp(async (app) => {
  app.surfaces.register(ROUTER_SURFACE)
  await app.register(routerModels)
  await app.register(runtimeRoutes)
}, { name: 'router-api', dependencies: ['storage', 'scheduler', 'models-api', 'upstreams', 'inference'] })
