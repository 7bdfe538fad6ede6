import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { join } from 'node:path'
import { Type } from 'typebox'
import { NotFoundError } from '../../core/base/errors.js'
import { PACKAGE_ROOT } from '../../core/base/paths.js'
import { PageFiles } from './page-files.js'

/** Where `npm run build` writes the page (scripts/build/build-web-ui.ts). */
export const PAGE_DIR = join(PACKAGE_ROOT, 'dist', 'web-ui')

/**
 * The page's policy. Model output is untrusted and rendered as HTML (sanitized Markdown): should anything slip
 * through the sanitizer, the browser still runs no script but the bundle, loads nothing from elsewhere and sends
 * the conversation nowhere but this server. The page sets no inline style or script, so neither is allowed.
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: blob:",
  "connect-src 'self'",
  "font-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ')

const FileParams = Type.Object({ file: Type.String({ maxLength: 200 }) })

export interface WebUiOptions {
  /** The built page's folder. @default PAGE_DIR */
  dir?: string
}

/**
 * The web chat page at /ui/. Its files need no API key (they hold no data; the page asks for a key when the API
 * answers 401), while the Host and Origin guards apply to them as to every route.
 */
export const webUiRoutes: FastifyPluginAsyncTypebox<WebUiOptions> = async (app, opts) => {
  const files = await PageFiles.load(opts.dir ?? PAGE_DIR)

  // Every answer under /ui, errors included, carries the policy: a 404 page is a page too.
  app.addHook('onSend', async (_request, reply, payload) => {
    reply.header('content-security-policy', CONTENT_SECURITY_POLICY)
    reply.header('x-content-type-options', 'nosniff')
    reply.header('referrer-policy', 'no-referrer')
    reply.header('cross-origin-opener-policy', 'same-origin')
    return payload
  })

  const send = (request: FastifyRequest, reply: FastifyReply, name: string): FastifyReply => {
    const file = files.get(name)
    if (file === null) {
      throw new NotFoundError(files.built || name !== 'index.html'
        ? `no such file of the web page: /ui/${name}`
        : 'the web page is not built here: run "npm run build"')
    }
    if (file.immutable) reply.cacheControl('public').cacheControl('max-age', '365d').cacheControl('immutable')
    else reply.cacheControl('no-cache')
    reply.header('etag', file.etag)
    if (request.headers['if-none-match'] === file.etag) return reply.code(304).send()
    return reply.type(file.contentType).send(file.body)
  }

  const config = { public: true }
  // Relative links in index.html need the trailing slash.
  app.get('/ui', { config }, async (_request, reply) => reply.redirect('/ui/', 301))
  app.get('/ui/', { config }, async (request, reply) => send(request, reply, 'index.html'))
  app.get('/ui/:file', { config, schema: { params: FileParams } }, async (request, reply) => send(request, reply, request.params.file))
}
