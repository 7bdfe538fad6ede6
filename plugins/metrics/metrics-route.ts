import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'

const MetricsReply = Type.String({ description: 'Prometheus text exposition format 0.0.4' })

export interface MetricsRouteOptions {
  /** The text to answer with, made when asked. */
  text(): Promise<string>
  contentType: string
}

/** GET /metrics, on the main address (behind the API key when keys are set) or on the metrics listener of its own. */
const metricsRoute: FastifyPluginAsyncTypebox<MetricsRouteOptions> = async (app, opts) => {
  app.get('/metrics', { config: { scope: 'admin', probe: true }, schema: { response: { 200: MetricsReply } } }, async (_request, reply) => {
    reply.type(opts.contentType)
    return opts.text()
  })
}

export default metricsRoute
