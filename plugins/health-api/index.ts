import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import fp from 'fastify-plugin'
import { Type } from 'typebox'
import { version } from '../../core/version.js'

const HealthReply = Type.Object({ status: Type.Literal('ok') })
const VersionReply = Type.Object({ version: Type.String() })

/**
 * What clients ask to see whether a server is there: `/api/health` (ours), and Ollama's `GET /` (plain text)
 * and `GET /api/version`, which Open WebUI and many Ollama integrations probe before anything else and
 * refuse the connection when they fail. Each answers HEAD too.
 */
const health: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/api/health', { schema: { response: { 200: HealthReply } } }, async () => ({ status: 'ok' as const }))
  app.get('/api/version', { schema: { response: { 200: VersionReply } } }, async () => ({ version: version() }))
  app.get('/', async (_request, reply) => reply.type('text/plain; charset=utf-8').send('llamagate is running'))
}

export default fp(health, { name: 'health-api', dependencies: ['security'] })
