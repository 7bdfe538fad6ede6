import fp from 'fastify-plugin'
import { RequestImages } from './images.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** A request's images, checked and inlined for llama-server (config.yaml's vision settings). */
    images: RequestImages
  }
}

/**
 * What every inference surface shares (leased runs, passthrough, the load form, images, a model's capabilities
 * and system prompt): the surfaces import its functions and depend on it; it decorates the app with the images
 * service, which config.yaml configures.
 */
export default fp(async (app) => {
  app.decorate('images', new RequestImages({ allow: app.config.vision.allowRemoteImages, allowPrivate: app.config.vision.allowPrivateImageHosts, maxCount: app.config.vision.maxRemoteImages, maxBytes: app.config.vision.maxRemoteImageBytes }))
}, { name: 'inference', dependencies: ['storage', 'scheduler', 'upstreams', 'call-hooks'] })
