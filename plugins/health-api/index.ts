import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import fp from 'fastify-plugin'
import { Type } from 'typebox'

const HealthReply = Type.Object({ status: Type.Literal('ok') })

const health: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/api/health', { schema: { response: { 200: HealthReply } } }, async () => ({ status: 'ok' as const }))
}

export default fp(health, { name: 'health-api', dependencies: ['security'] })
