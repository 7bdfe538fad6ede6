import fp from 'fastify-plugin'
import { modelNamedIn } from '../../core/base/model-name.js'
import type { RequestUsage } from '../../core/base/request-usage.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** The request's usage record (core/base/request-usage.ts); undefined for probes and the web page's files. */
    usage: RequestUsage | undefined
  }
}

/**
 * Registered before the security plugin, so that its refusals (401, 403) have their lines too.
 * One info line per request once its response is over: request id, surface, model, status, duration, time to
 * first token and tokens (from the lease it held, core/base/request-usage.ts), and whether the client left before the
 * end, which is an everyday event, not an error.
 */
export default fp(async (app) => {
  app.decorateRequest('usage', undefined)
  app.addHook('onRequest', (request, reply, done) => {
    const path = request.url.split('?')[0]!
    // Probes, scrapes (routes marked `probe`) and the web page's files would drown the lines that matter.
    if (request.routeOptions.config.probe === true || path.startsWith('/ui/')) { done(); return }
    const usage: RequestUsage = { promptTokens: 0, generatedTokens: 0 }
    reply.raw.once('close', () => {
      const gone = !reply.raw.writableFinished
      request.log.info({
        method: request.method,
        path,
        surface: app.surfaces.labelOf(request.routeOptions.url ?? path),
        model: usage.model ?? modelNamedIn(request.body)?.slice(0, 200) ?? null,
        status: reply.raw.statusCode,
        ms: Math.round(reply.elapsedTime * 10) / 10,
        ...(usage.firstTokenMs !== undefined ? { ttftMs: Math.round(usage.firstTokenMs * 10) / 10 } : {}),
        ...(usage.promptTokens || usage.generatedTokens ? { promptTokens: usage.promptTokens, generatedTokens: usage.generatedTokens } : {}),
        // The class it ran at, where not the default one (core/base/priority.ts).
        ...(usage.priority !== undefined && usage.priority !== 'interactive' ? { priority: usage.priority } : {}),
        ...(gone ? { clientGone: true } : {}),
      }, gone ? 'request ended: the client went away' : 'request')
    })
    // The handler hands it to the lease it takes, which fills it.
    request.usage = usage
    done()
  })
}, { name: 'access-log' })
