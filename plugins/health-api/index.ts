import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import fp from 'fastify-plugin'
import { Type } from 'typebox'
import { OLLAMA_API_VERSION, version } from '../../core/base/version.js'

const HealthReply = Type.Object({ status: Type.Literal('ok') })
// `version` is the Ollama API level (clients compare it with Ollama's releases); llamagate's own is beside it.
const VersionReply = Type.Object({ version: Type.String(), llamagate_version: Type.String() })

/**
 * What clients ask to see whether a server is there: `/api/health` (ours), Ollama's `GET /` (plain text) and
 * `GET /api/version`, which Open WebUI and many Ollama integrations probe before anything else and refuse the
 * connection when they fail, and Claude Code's `/api/hello`. Each answers HEAD too. A browser asking for `/` is sent
 * to the web page.
 */
const health: FastifyPluginAsyncTypebox = async (app) => {
  // Probes carry no API key (load balancers, supervisors, Claude Code's preflight whatever key it holds): each says
  // only that the server is there, or which API level.
  const probe = { public: true, probe: true }
  app.get('/api/health', { config: probe, schema: { response: { 200: HealthReply } } }, async () => ({ status: 'ok' as const }))
  // Claude Code's connectivity preflight (`HEAD /api/hello` at its ANTHROPIC_BASE_URL, unless
  // CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC is set): a 404 there reads as a server that is down.
  app.get('/api/hello', { config: probe, schema: { response: { 200: HealthReply } } }, async () => ({ status: 'ok' as const }))
  app.get('/api/version', { config: probe, schema: { response: { 200: VersionReply } } }, async () => ({ version: OLLAMA_API_VERSION, llamagate_version: version() }))
  // Ollama's clients and Open WebUI ask `/` before anything else, without a key.
  app.get('/', { config: { public: true } }, async (request, reply) => {
    // A person who opens the server's address in a browser gets the web page (plugins/web-ui); clients probing
    // for Ollama send no text/html and keep the text they check for.
    if (/\btext\/html\b/i.test(request.headers.accept ?? '')) return reply.redirect('/ui/', 302)
    return reply.type('text/plain; charset=utf-8').send('llamagate is running')
  })
}

export default fp(health, { name: 'health-api', dependencies: ['security'] })
