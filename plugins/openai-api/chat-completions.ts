import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { clientGone } from '../../core/event-stream.js'
import { withModelSystem } from '../inference/model-system.js'
import { requestRecord } from '../inference/request-record.js'
import { runPassthrough, type PassthroughRoute } from '../inference/passthrough-run.js'
import { OPENAI_CHAT_FIELDS } from '../inference/runtime-fields.js'
import { chatStreamRewrite, chatTextToSpec } from './chat-spec-fields.js'
import { OPENAI_OPTIONS, STREAM_DONE } from './openai-options.js'
import { ChatCompletionBody } from './schemas.js'

const CHAT: PassthroughRoute = {
  path: '/v1/chat/completions', topLevelOptions: OPENAI_OPTIONS, streamEnd: STREAM_DONE, fields: OPENAI_CHAT_FIELDS,
  whole: chatTextToSpec, streamRewrite: chatStreamRewrite,
}

/** OpenAI's chat completions, through llama-server's own (its Jinja template, tools, response_format). */
const chatCompletions: FastifyPluginAsyncTypebox = async (app) => {
  app.post('/v1/chat/completions', { config: { scope: 'infer' }, schema: { body: ChatCompletionBody } }, async (request, reply) => {
    const body = request.body
    const record = requestRecord(app, body.model)
    // A message without a role is the user's; llama-server wants one on every message. A model created with a
    // system prompt gets it first when the conversation brings none.
    const withRoles = body.messages.map((m) => m.role === undefined ? { ...m, role: 'user' } : m)
    const messages = withModelSystem(record, await app.images.inline(record, withRoles, () => clientGone(reply)))
    return runPassthrough(app.leases, request, reply, CHAT, { ...body, messages })
  })
}

export default chatCompletions
