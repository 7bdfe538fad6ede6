import fp from 'fastify-plugin'
import { requestRecord } from '../inference/request-record.js'
import { llamaServerErrorBody } from '../router-api/error-shape.js'
import { Decisions } from './decision-service.js'
import openAiDecisions from './openai-decisions.js'
import systemOneRoute from './systemone-route.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Decisions on local models (System One, OpenAI's Decisions): for the surfaces and for plugins, such as a guardrail. */
    decisions: Decisions
  }
}

/**
 * Decision models: llama.cpp's `/v1/systemone` (llama-server's error shape, `{"error": {code, message, type}}`) and OpenAI's
 * `/v1/decisions` (OpenAI's, as all of /v1), on decision models and, uncalibrated, on chat models.
 */
export default fp(async (app) => {
  app.surfaces.register({ label: 'decisions', paths: ['/v1/decisions'] })
  app.surfaces.register({ label: 'decisions', paths: ['/v1/systemone'], errorShape: { body: llamaServerErrorBody } })
  app.decorate('decisions', new Decisions({ leases: app.leases, record: (name) => requestRecord(app, name) }))
  await app.register(systemOneRoute)
  await app.register(openAiDecisions)
}, { name: 'decisions', dependencies: ['storage', 'upstreams', 'call-hooks', 'inference', 'openai-api', 'router-api'] })
