import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { clientGone } from '../../core/server/event-stream.js'
import { placeSystemMessages } from '../inference/chat-system-messages.js'
import { withModelSystem } from '../inference/model-system.js'
import { runParsedChat } from '../inference/parsed-chat-run.js'
import { requestRecord } from '../inference/request-record.js'
import { runPassthrough, type PassthroughRoute } from '../inference/passthrough-run.js'
import { OPENAI_CHAT_FIELDS } from '../inference/runtime-fields.js'
import { systemPlacement } from '../inference/system-placement.js'
import { chatStreamRewrite, chatTextToSpec } from './chat-spec-fields.js'
import { chatToolChoice } from './chat-tool-choice.js'
import { forcedChatShapes } from './forced-chat-shapes.js'
import { countInputTokens } from './input-tokens.js'
import { OPENAI_OPTIONS, STREAM_DONE } from './openai-options.js'
import { ChatCompletionBody } from './schemas.js'

const CHAT: PassthroughRoute = {
  path: '/v1/chat/completions',
  topLevelOptions: OPENAI_OPTIONS,
  streamEnd: STREAM_DONE,
  fields: OPENAI_CHAT_FIELDS,
  // System messages as the model's template takes them (chat-system-messages.ts).
  shape: async (fields, lease) => ({ ...fields, messages: placeSystemMessages(fields.messages as Array<{ role?: string }>, await systemPlacement(lease)) }),
  whole: chatTextToSpec,
  streamRewrite: chatStreamRewrite,
}

/**
 * OpenAI's chat completions, through llama-server's own (its Jinja template, tools, response_format). A tool choice
 * that forces a call (`required`, a named function) is held to a grammar of its own and its answer read and made
 * into the calls (plugins/inference/forced-call-schema.ts says why llama-server's own does not force one).
 */
const chatCompletions: FastifyPluginAsyncTypebox = async (app) => {
  app.post('/v1/chat/completions', { config: { scope: 'infer' }, schema: { body: ChatCompletionBody } }, async (request, reply) => {
    const { forced, fields } = chatToolChoice(request.body)
    const body = { ...request.body, ...fields }
    const record = requestRecord(app, body.model)
    // A message without a role is the user's; llama-server wants one on every message. A model created with a
    // system prompt gets it first when the conversation brings none.
    const withRoles = body.messages.map((m) => m.role === undefined ? { ...m, role: 'user' } : m)
    const messages = withModelSystem(record, await app.images.inline(record, withRoles, () => clientGone(reply)))
    if (forced !== null) {
      const includeUsage = body.stream_options?.include_usage === true
      return runParsedChat(app.leases, request, reply, { body: { ...body, messages }, topLevelOptions: OPENAI_OPTIONS, forced }, forcedChatShapes(includeUsage))
    }
    return runPassthrough(app.leases, request, reply, CHAT, { ...body, messages })
  })

  // The input-token count of a chat request, as OpenAI counts a Responses request's (/v1/responses/input_tokens).
  app.post('/v1/chat/completions/input_tokens', { config: { scope: 'infer' }, schema: { body: ChatCompletionBody } }, async (request, reply) => {
    const body = request.body
    const record = requestRecord(app, body.model)
    const withRoles = body.messages.map((m) => m.role === undefined ? { ...m, role: 'user' } : m)
    const messages = withModelSystem(record, withRoles)
    const count = await countInputTokens(app.leases, request, reply, body.model, { messages: messages as unknown as Array<Record<string, unknown>>, tools: (body as { tools?: unknown[] | null }).tools ?? null }, body.keep_alive)
    return { object: 'chat.completion.input_tokens', input_tokens: count }
  })
}

export default chatCompletions
