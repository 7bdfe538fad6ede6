import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { BadRequestError } from '../../core/base/errors.js'
import { runWhole } from '../inference/whole-run.js'
import { requestRecord } from '../inference/request-record.js'
import { loadPurpose, type AskPurpose } from '../leases/lease.js'
import type { ModelKind } from '../storage/model-kind.js'
import { RuntimeRouteBody } from './schemas.js'

/** The paths of llama-server's own that scripts written for its router mode call with a model's name. */
const PATHS = ['/tokenize', '/detokenize', '/apply-template', '/infill'] as const

/** What a request of these asks of a model: its own runtime, a decision model's as one that decides. */
function askOf (kind: ModelKind): AskPurpose {
  return kind === 'decision' ? 'decide' : loadPurpose(kind)
}

/**
 * llama-server's `/tokenize`, `/detokenize`, `/apply-template` and `/infill` as its router mode serves them: the body
 * names the model, the rest goes to that model's llama-server as it came, and its answer comes back as it was.
 * Leased like any request (keys, the key's models, queue, quotas); `/infill` answers whole (its stream is
 * /api/generate's `suffix`).
 */
const runtimeRoutes: FastifyPluginAsyncTypebox = async (app) => {
  for (const path of PATHS) {
    app.post(path, { config: { scope: 'infer' }, schema: { body: RuntimeRouteBody } }, async (request, reply) => {
      const { model, keep_alive: keepAlive, ...rest } = request.body
      if (path === '/infill' && (rest as { stream?: unknown }).stream === true) throw new BadRequestError('/infill answers whole here: leave "stream" out, or stream a fill-in-the-middle through /api/generate with "suffix"')
      const record = requestRecord(app, model)
      return runWhole(app.leases, request, reply, { model, keep_alive: keepAlive }, askOf(record.kind), async (lease) => {
        const answer = await lease.endpoint.postJson<Record<string, unknown>>(path, rest, lease.signal)
        if (path === '/infill') {
          const timings = answer.timings as { prompt_n?: unknown, predicted_n?: unknown } | undefined
          const n = (v: unknown): number => typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : 0
          lease.countTokens(n(timings?.prompt_n), n(timings?.predicted_n))
        }
        return answer
      })
    })
  }
}

export default runtimeRoutes
