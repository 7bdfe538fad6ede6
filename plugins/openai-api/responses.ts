import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { clientGone } from '../../core/server/event-stream.js'
import type { FastifyRequest } from 'fastify'
import type { Static } from 'typebox'
import { BadRequestError, NotFoundError } from '../../core/base/errors.js'
import { withModelSystem } from '../inference/model-system.js'
import { requestRecord } from '../inference/request-record.js'
import { ResponseStore, type Reach, type ResponseItem } from './response-store.js'
import { countInputTokens } from './input-tokens.js'
import { runResponses } from './responses-run.js'
import { inputItems, responsesToChat } from './responses-to-chat.js'
import { ResponseIdParams, ResponseList, ResponsesBody } from './schemas.js'

/**
 * OpenAI's Responses API (`client.responses.create`, Codex, the AI SDK's `openai.responses()`), served on
 * llama-server's chat completions, with OpenAI's stateful side kept here: stored responses,
 * `previous_response_id`, `item_reference`, `GET` and `DELETE /v1/responses/{id}`. Each stored response is its
 * key's: another key finds it as absent as an unknown id; an admin key reads, lists and deletes any.
 */
const responses: FastifyPluginAsyncTypebox = async (app) => {
  const store = new ResponseStore()

  /** A request as a chat: its key's earlier responses it continues and the items it references, resolved. */
  const translated = (request: FastifyRequest, body: Static<typeof ResponsesBody>) => {
    const owner = ownerOf(request)
    const history = body.previous_response_id ? previousConversation(store, body.previous_response_id, owner, body.model) : []
    const input = inputItems(body.input as ResponseItem[] | string).map((item) => resolveReference(store, item, owner, body.model))
    return { body, owner, history, input, record: requestRecord(app, body.model), chat: responsesToChat({ ...body, tools: body.tools ?? undefined }, history, input) }
  }

  app.post('/v1/responses', { config: { scope: 'infer' }, schema: { body: ResponsesBody } }, async (request, reply) => {
    const { body, owner, history, input, record, chat } = translated(request, request.body)
    const messages = withModelSystem(record, await app.images.inline(record, chat.messages, () => clientGone(reply)))
    return runResponses(app.leases, request, reply, { body, history, input, chat: { ...chat, messages }, store, owner })
  })

  // OpenAI's count of a Responses request's input (`client.responses.inputTokens.count`): the same translation to a
  // chat, previous responses and references included, rendered and tokenized by the model's runtime.
  app.post('/v1/responses/input_tokens', { config: { scope: 'infer' }, schema: { body: ResponsesBody } }, async (request, reply) => {
    const { body, record, chat } = translated(request, request.body)
    const messages = withModelSystem(record, chat.messages)
    const count = await countInputTokens(app.leases, request, reply, body.model, { messages: messages as unknown as Array<Record<string, unknown>>, tools: chat.tools ?? null }, body.keep_alive)
    return { object: 'response.input_tokens', input_tokens: count }
  })

  app.get('/v1/responses/:id', { config: { scope: 'infer' }, schema: { params: ResponseIdParams } }, async (request) => {
    const stored = store.get(request.params.id, reachOf(request))
    if (stored === null) throw notFound(request.params.id)
    return stored.response
  })

  app.delete('/v1/responses/:id', { config: { scope: 'infer' }, schema: { params: ResponseIdParams } }, async (request) => {
    if (!store.delete(request.params.id, reachOf(request))) throw notFound(request.params.id)
    return { id: request.params.id, object: 'response', deleted: true }
  })

  // Not OpenAI's: what an admin needs to find a key's stored responses (to delete them) without reading them.
  app.get('/v1/responses', { config: { scope: 'admin' }, schema: { response: { 200: ResponseList } } }, async () => ({ object: 'list' as const, data: store.list() }))
}

/** The key a response is stored for (keys off: null, the one owner of every response). */
function ownerOf (request: FastifyRequest): string | null {
  return request.grant?.name ?? null
}

/** Whose stored responses a request reaches: its key's own, or any for a key with the admin scope. */
function reachOf (request: FastifyRequest): Reach {
  return request.grant?.scopes.has('admin') === true ? 'any' : { owner: ownerOf(request) }
}

/**
 * The conversation a response continues: only one the same model answered for the same key (nothing is shared
 * across models or keys; an admin continues its own only, too).
 */
function previousConversation (store: ResponseStore, id: string, owner: string | null, model: string): readonly ResponseItem[] {
  const previous = store.get(id, { owner }, model)
  // OpenAI's answer, status and code: a 400 naming the parameter.
  if (previous === null) throw new BadRequestError(`Previous response with id '${id}' not found.`, 'previous_response_not_found')
  return previous.conversation
}

/** An `item_reference` is the stored output item it names (the AI SDK sends them for its earlier answers), of the same key's. */
function resolveReference (store: ResponseStore, item: ResponseItem, owner: string | null, model: string): ResponseItem {
  if (item.type !== 'item_reference') return item
  const found = typeof item.id === 'string' ? store.item(item.id, owner, model) : null
  if (found === null) throw new BadRequestError(`Item with id '${String(item.id)}' not found.`, 'item_not_found')
  return found
}

function notFound (id: string): NotFoundError {
  return new NotFoundError(`Response with id '${id}' not found.`)
}

export default responses
