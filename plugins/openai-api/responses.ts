import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { clientGone } from '../../core/client-gone.js'
import { BadRequestError, NotFoundError } from '../../core/errors.js'
import { withModelSystem } from '../inference/model-system.js'
import { requestRecord } from '../inference/request-record.js'
import { ResponseStore, type ResponseItem } from './response-store.js'
import { runResponses } from './responses-run.js'
import { inputItems, responsesToChat } from './responses-to-chat.js'
import { ResponseIdParams, ResponsesBody } from './schemas.js'

/**
 * OpenAI's Responses API (`client.responses.create`, Codex, the AI SDK's `openai.responses()`), served on
 * llama-server's chat completions, with OpenAI's stateful side kept here: stored responses,
 * `previous_response_id`, `item_reference`, `GET` and `DELETE /v1/responses/{id}`.
 */
const responses: FastifyPluginAsyncTypebox = async (app) => {
  const store = new ResponseStore()

  app.post('/v1/responses', { config: { scope: 'infer' }, schema: { body: ResponsesBody } }, async (request, reply) => {
    const body = request.body
    const record = requestRecord(app, body.model)
    const history = body.previous_response_id ? previousConversation(store, body.previous_response_id, body.model) : []
    const input = inputItems(body.input as ResponseItem[] | string).map((item) => resolveReference(store, item, body.model))
    const chat = responsesToChat({ ...body, tools: body.tools ?? undefined }, history, input)
    const messages = withModelSystem(record, await app.images.inline(record, chat.messages, () => clientGone(reply)))
    return runResponses(app.scheduler, request, reply, { body, history, input, chat: { ...chat, messages }, store })
  })

  app.get('/v1/responses/:id', { config: { scope: 'infer' }, schema: { params: ResponseIdParams } }, async (request) => {
    const stored = store.get(request.params.id)
    if (stored === null) throw notFound(request.params.id)
    return stored.response
  })

  app.delete('/v1/responses/:id', { config: { scope: 'infer' }, schema: { params: ResponseIdParams } }, async (request) => {
    if (!store.delete(request.params.id)) throw notFound(request.params.id)
    return { id: request.params.id, object: 'response', deleted: true }
  })
}

/** The conversation a response continues: only one the same model answered (nothing is shared across models). */
function previousConversation (store: ResponseStore, id: string, model: string): readonly ResponseItem[] {
  const previous = store.get(id, model)
  // OpenAI's answer, status and code: a 400 naming the parameter.
  if (previous === null) throw new BadRequestError(`Previous response with id '${id}' not found.`, 'previous_response_not_found')
  return previous.conversation
}

/** An `item_reference` is the stored output item it names (the AI SDK sends them for its earlier answers). */
function resolveReference (store: ResponseStore, item: ResponseItem, model: string): ResponseItem {
  if (item.type !== 'item_reference') return item
  const found = typeof item.id === 'string' ? store.item(item.id, model) : null
  if (found === null) throw new BadRequestError(`Item with id '${String(item.id)}' not found.`, 'item_not_found')
  return found
}

function notFound (id: string): NotFoundError {
  return new NotFoundError(`Response with id '${id}' not found.`)
}

export default responses
