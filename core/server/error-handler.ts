import type { FastifyBaseLogger, FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import FindMyWay from 'find-my-way'
import { fromGatewayError, fromHttpError, isHttpError, type ErrorReply } from '../base/error-shapes.js'
import { ClientGoneError, GatewayError } from '../base/errors.js'

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const

/**
 * Turns any thrown value into what the client sees. Gateway errors and Fastify's own 4xx errors keep their
 * status and message; anything else is a bug: logged in full, answered 500 with a generic message.
 */
export function toErrorReply (err: unknown, log?: FastifyBaseLogger): ErrorReply {
  // A client leaving mid-answer is an everyday event, not a failure of the server.
  if (err instanceof ClientGoneError) log?.info('client went away before the answer was complete')
  if (err instanceof GatewayError) return fromGatewayError(err)
  if (isHttpError(err)) return fromHttpError(err)
  const fastifyError = err as Partial<FastifyError> & { validation?: unknown }
  if (fastifyError.validation) {
    return { statusCode: 400, message: `invalid request: ${withAllowedValues(fastifyError.message ?? '', fastifyError.validation)}`, code: 'invalid_request', headers: {} }
  }
  const status = fastifyError.statusCode
  if (typeof status === 'number' && status >= 400 && status < 500) {
    return { statusCode: status, message: clientMessage(fastifyError), code: fastifyError.code ?? null, headers: {} }
  }
  log?.error({ err }, 'unexpected error')
  return { statusCode: 500, message: 'internal server error: see the server log for details', code: 'internal_error', headers: {} }
}

/** Ajv says "must be equal to constant" or "to one of the allowed values" without saying which: name them. */
function withAllowedValues (message: string, validation: unknown): string {
  const errors = validation as Array<{ keyword?: string, params?: { allowedValue?: unknown, allowedValues?: unknown[] } }>
  // One error only: a union's several branches each say "constant", and no one value is the answer there.
  const first = errors.length === 1 ? errors[0] : undefined
  if (first?.keyword === 'const' && first.params?.allowedValue !== undefined) {
    return message.replace('must be equal to constant', `must be ${JSON.stringify(first.params.allowedValue)}`)
  }
  if (first?.keyword === 'enum' && Array.isArray(first.params?.allowedValues)) {
    return message.replace('must be equal to one of the allowed values', `must be one of ${first.params.allowedValues.map((v) => JSON.stringify(v)).join(', ')}`)
  }
  return message
}

// Fastify's texts are written for developers of Fastify apps; say what the client did instead.
function clientMessage (err: Partial<FastifyError>): string {
  switch (err.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case undefined:
      if (err instanceof SyntaxError || err.code === 'FST_ERR_CTP_INVALID_JSON_BODY') return `request body is not valid JSON: ${err.message}`
      return err.message ?? 'bad request'
    case 'FST_ERR_CTP_EMPTY_JSON_BODY': return 'missing request body: send a JSON object'
    case 'FST_ERR_CTP_BODY_TOO_LARGE': return 'request body is larger than the configured limit (limits.body_size)'
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE': return `unsupported content type: send JSON (${err.message})`
    default: return err.message ?? 'bad request'
  }
}

/** Sends an error in the shape of the request's surface. */
function sendError (request: FastifyRequest, reply: FastifyReply, err: unknown): FastifyReply {
  const error = toErrorReply(err, request.log)
  return reply.code(error.statusCode).headers(error.headers).type('application/json; charset=utf-8')
    .send(request.server.surfaces.errorShapeOf(request.url).body(error))
}

/**
 * One error handler and one not-found handler for the whole app. A path that exists with another method is
 * 405 with `Allow`; anything else is a JSON 404. Routes are mirrored into a router of our own, since Fastify
 * itself only says "not found".
 */
export function installErrorHandling (app: FastifyInstance): void {
  const known = FindMyWay()
  app.addHook('onRoute', (route) => {
    // CORS preflight answers every path; it says nothing about which paths exist.
    if (route.url === '*' || route.url === '/*') return
    for (const method of [route.method].flat()) {
      if (!known.hasRoute(method as any, route.url)) known.on(method as any, route.url, () => {})
    }
  })
  app.setErrorHandler((err, request, reply) => sendError(request, reply, err))
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0] ?? '/'
    const allowed = METHODS.filter((m) => known.find(m, path) !== null)
    if (allowed.length > 0) {
      return sendError(request, reply.header('Allow', allowed.join(', ')),
        new GatewayError(405, `method ${request.method} is not allowed on ${path}; use ${allowed.join(' or ')}`, { code: 'method_not_allowed' }))
    }
    return sendError(request, reply, new GatewayError(404, `no such endpoint: ${request.method} ${path}`, { code: 'not_found' }))
  })
}
