import fp from 'fastify-plugin'
import { PAGE_DIR, webUiRoutes } from './page-routes.js'

export default fp(async (app) => {
  app.surfaces.register({ label: 'web', paths: ['/ui', '/ui/*'] })
  await app.register(webUiRoutes, { dir: PAGE_DIR })
}, { name: 'web-ui', dependencies: ['security'] })
