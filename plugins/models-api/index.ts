import fp from 'fastify-plugin'
import blobs from './blobs.js'
import create from './create.js'
import manage from './manage.js'
import show from './show.js'
import tags from './tags.js'

/** The model-record surfaces: tags, show, copy, create and its blobs, delete, import, /v1/models. */
export default fp(async (app) => {
  await app.register(tags)
  await app.register(show)
  await app.register(manage)
  await app.register(create)
  await app.register(blobs)
}, { name: 'models-api', dependencies: ['storage', 'convert', 'inference', 'upstreams'] })
