import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { clientGone } from '../../core/client-gone.js'
import { withModelSystem } from '../storage/model-system.js'
import { inlineImages, type RemoteImages } from './image-urls.js'
import { runPassthrough, type PassthroughRoute } from './passthrough-run.js'
import { ChatCompletionBody, CompletionBody, ResponsesBody } from './schemas.js'

// OpenAI's top-level fields that are sampling options.
const SAMPLING = ['temperature', 'top_p', 'max_tokens', 'seed', 'stop', 'presence_penalty', 'frequency_penalty'] as const
// llama-server ends chat and text completion streams with `[DONE]`.
const DONE = Buffer.from('data: [DONE]\n\n')

const CHAT: PassthroughRoute = { path: '/v1/chat/completions', topLevelSampling: SAMPLING, streamEnd: DONE }
const COMPLETIONS: PassthroughRoute = { path: '/v1/completions', topLevelSampling: SAMPLING, streamEnd: DONE }
// A Responses stream has no [DONE]: its last event is `response.completed`, whose data holds the whole
// response; the body ending in good order (the relay checks the chunked coding's end) is the sign.
const RESPONSES: PassthroughRoute = { path: '/v1/responses', topLevelSampling: ['temperature', 'top_p'], streamEnd: null }

const completions: FastifyPluginAsyncTypebox = async (app) => {
  const remoteImages: RemoteImages = { allow: app.config.vision.allowRemoteImages, maxBytes: app.config.limits.bodySize }
  app.post('/v1/chat/completions', { schema: { body: ChatCompletionBody } }, async (request, reply) => {
    const body = request.body
    const record = app.store.get(body.model)
    // A message without a role is the user's; llama-server wants one on every message. A model created with a
    // system prompt gets it first when the conversation brings none.
    const withRoles = body.messages.map((m) => m.role === undefined ? { ...m, role: 'user' } : m)
    const messages = withModelSystem(record, await inlineImages(record, withRoles, remoteImages, clientGone(reply)))
    return runPassthrough(app.scheduler, request, reply, CHAT, { ...body, messages })
  })
  app.post('/v1/completions', { schema: { body: CompletionBody } }, (request, reply) =>
    runPassthrough(app.scheduler, request, reply, COMPLETIONS, request.body))
  app.post('/v1/responses', { schema: { body: ResponsesBody } }, async (request, reply) => {
    const { max_output_tokens: maxOutputTokens, ...fields } = request.body
    const body = { ...fields, input: await inlineImages(app.store.get(fields.model), fields.input, remoteImages, clientGone(reply)) }
    // Responses' `max_output_tokens` is the contract's max_tokens: a top-level value wins over `options`.
    const options = maxOutputTokens !== undefined && maxOutputTokens !== null ? { ...body.options, max_tokens: maxOutputTokens } : body.options
    return runPassthrough(app.scheduler, request, reply, RESPONSES, { ...body, options })
  })
}

export default completions
