// An example admin plugin: adds a route that reports how long the server has been up and what it serves.
// Load it from config.yaml:
//
//   plugins:
//     - path: ./docs/examples/uptime-plugin.js
//       options: { route: /api/uptime }
//
// A plugin is an ES module whose default export is a Fastify plugin. It runs after the built-in plugins, so
// the decorators of docs/plugins.md (app.config, app.store, app.callHooks, app.backends, ...) are there to use.

const startedAt = Date.now()

/** @param {import('fastify').FastifyInstance} app @param {{ route?: string }} options */
export default async function uptimePlugin (app, options) {
  const route = options.route ?? '/api/uptime'
  app.get(route, {
    schema: {
      response: {
        200: {
          type: 'object',
          properties: { uptime_ms: { type: 'integer' }, port: { type: 'integer' }, models: { type: 'integer' } },
        },
      },
    },
  }, async () => ({
    uptime_ms: Date.now() - startedAt,
    port: app.config.port,
    // app.store exists when the storage plugin is loaded (it is, by default).
    models: app.hasDecorator('store') ? app.store.list().length : 0,
  }))
}
