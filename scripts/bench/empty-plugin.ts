import type { FastifyInstance } from 'fastify'

/**
 * A plugin that adds nothing: `npm run bench -- --plugin empty` runs plain llamagate in the plugin's setup (its own
 * process and llama-server, its place in the rotation), the control for what `--plugin noop` measures.
 */
export default async function empty (_app: FastifyInstance): Promise<void> {}
