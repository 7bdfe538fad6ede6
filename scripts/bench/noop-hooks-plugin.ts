import type { FastifyInstance } from 'fastify'

/**
 * A plugin with a call hook in every phase that does nothing: `npm run bench -- --plugin noop` runs it beside plain
 * llamagate, to measure what the hooks' path costs (a streamed answer is read as events, each piece offered).
 */
export default async function noopHooks (app: FastifyInstance): Promise<void> {
  app.callHooks.add({ name: 'noop-hooks', before () {}, piece () {}, end () {}, after () {}, failure () {} })
}
