import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import fp from 'fastify-plugin'
import { ConverterStatus } from './convert-schemas.js'
import { RuntimesReply } from './runtimes-schemas.js'

/** What this machine can run: GET /api/runtimes, GET /api/convert/status. */
const system: FastifyPluginAsyncTypebox = async (app) => {
  // Free memory is read again on each call; the builds and the choice are those made at start.
  app.get('/api/runtimes', { schema: { response: { 200: RuntimesReply } } }, async () => app.runtimes.describe(await app.runtimes.detectDevices()))
  app.get('/api/convert/status', { schema: { response: { 200: ConverterStatus } } }, async () => app.converter.readiness({ fresh: true }))
}

export default fp(system, { name: 'system-api', dependencies: ['runtimes', 'convert'] })
