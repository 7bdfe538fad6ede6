import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { clientGone } from '../../core/server/event-stream.js'
import fp from 'fastify-plugin'
import { runParsedChat } from '../inference/parsed-chat-run.js'
import { runPassthrough, type PassthroughRoute } from '../inference/passthrough-run.js'
import { requestRecord } from '../inference/request-record.js'
import { ANTHROPIC_FIELDS } from '../inference/runtime-fields.js'
import { systemPlacement } from '../inference/system-placement.js'
import type { Lease } from '../leases/lease.js'
import { ANTHROPIC_SURFACE } from './error-shape.js'
import { forcedMessageShapes, messagesForcedCall } from './forced-message.js'
import { messageStreamRewrite, messageTextToSpec } from './message-spec-fields.js'
import { placeSystem, shapeMessages, type MessagesFields } from './messages-body.js'
import { messagesToChat } from './messages-to-chat.js'
import { CountTokensBody, MessagesBody } from './schemas.js'

// llama-server converts a Messages request to a chat keeping only these sampling fields (and stop_sequences):
// the gateway sends every sampling option under its own name, and llama-server reads these.
const SAMPLING_FIELDS = { temperature: 'temperature', top_p: 'top_p', top_k: 'top_k', max_tokens: 'max_tokens' }
const MESSAGES: PassthroughRoute = {
  path: '/v1/messages',
  topLevelOptions: SAMPLING_FIELDS,
  // A Messages stream ends with `event: message_stop`, whose data is always the same.
  streamEnd: Buffer.from('data: {"type":"message_stop"}\n\n'),
  fields: ANTHROPIC_FIELDS,
  promptInHead: true,
  // llama-server's answers with the fields Anthropic's types require (message-spec-fields.ts).
  whole: messageTextToSpec,
  streamRewrite: () => messageStreamRewrite(),
  shape: placedSystem,
}
// Counted as the same request would be evaluated.
const COUNT_TOKENS: PassthroughRoute = { path: '/v1/messages/count_tokens', topLevelOptions: {}, streamEnd: null, fields: ANTHROPIC_FIELDS, shape: placedSystem }

/** The system prompt and messages as the lease's model's template takes them (messages-body.ts). */
async function placedSystem (fields: Record<string, unknown>, lease: Lease): Promise<Record<string, unknown>> {
  return placeSystem(fields as unknown as MessagesFields, await systemPlacement(lease)) as unknown as Record<string, unknown>
}

/**
 * Anthropic's Messages API (the Anthropic SDKs, Claude Code): POST /v1/messages, streamed or not, and
 * POST /v1/messages/count_tokens, through llama-server's own implementation, with our model names, options,
 * keep_alive, queueing, keys (`x-api-key` too) and Anthropic's error shape. A tool choice that forces a call (`any`,
 * a named tool) goes through llama-server's chat completions instead, held to a grammar of the call and read back
 * into tool_use blocks (plugins/inference/forced-call-schema.ts): llama-server's Messages path takes no grammar.
 */
const anthropic: FastifyPluginAsyncTypebox = async (app) => {
  app.surfaces.register(ANTHROPIC_SURFACE)
  app.post('/v1/messages', { config: { scope: 'infer' }, schema: { body: MessagesBody } }, async (request, reply) => {
    const body = shapeMessages(request.body)
    const forced = messagesForcedCall(body)
    const messages = await app.images.inline(requestRecord(app, body.model), body.messages, () => clientGone(reply))
    if (forced !== null) {
      const chat = messagesToChat({ ...body, messages })
      return runParsedChat(app.leases, request, reply, { body: { ...chat, model: body.model }, topLevelOptions: SAMPLING_FIELDS, forced, idPrefix: 'toolu_' }, forcedMessageShapes())
    }
    return runPassthrough(app.leases, request, reply, MESSAGES, { ...body, messages })
  })
  app.post('/v1/messages/count_tokens', { config: { scope: 'infer' }, schema: { body: CountTokensBody } }, (request, reply) =>
    runPassthrough(app.leases, request, reply, COUNT_TOKENS, { ...shapeMessages(request.body), stream: false }))
}

export default fp(anthropic, { name: 'anthropic-api', dependencies: ['storage', 'upstreams', 'inference'] })
