import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { ContextExceededError } from '../../core/base/errors.js'
import { parseKeepAlive } from '../../core/base/units.js'
import { placeSystemMessages } from '../inference/chat-system-messages.js'
import { withImages } from '../inference/images.js'
import { loadForm } from '../inference/load-form.js'
import { withModelSystem } from '../inference/model-system.js'
import { requestRecord } from '../inference/request-record.js'
import { systemPlacement } from '../inference/system-placement.js'
import { logprobsAsked } from './logprobs.js'
import { runNative } from './native-run.js'
import { responseFormat } from './response-format.js'
import { truncateHistory } from './truncate-history.js'
import { ChatBody } from './schemas.js'
import { thinkFields } from './think-fields.js'

const chat: FastifyPluginAsyncTypebox = async (app) => {
  app.post('/api/chat', { config: { scope: 'infer' }, schema: { body: ChatBody } }, async (request, reply) => {
    const body = request.body
    const logprobs = logprobsAsked(body.logprobs, body.top_logprobs)
    const messages = body.messages ?? []
    if (messages.length === 0) {
      // Ollama's forms: no messages loads the model; with keep_alive 0 it unloads it.
      const { model, doneReason } = await loadForm(app.leases, { get: (name) => requestRecord(app, name) }, { model: body.model, options: body.options, keepAliveMs: parseKeepAlive(body.keep_alive), log: request.log, usage: request.usage })
      return { model, created_at: new Date().toISOString(), message: { role: 'assistant', content: '' }, done: true, done_reason: doneReason }
    }
    const record = requestRecord(app, body.model)
    const format = responseFormat(body.format)
    const history = withModelSystem(record, messages.map((m, i) => ({
      role: m.role ?? 'user',
      content: withImages(m.content ?? '', app.images.parts(record, m.images, `message ${i}`)),
      ...(m.tool_calls ? { tool_calls: m.tool_calls.map((c, i) => ({ id: `call_${i}`, type: 'function', function: { name: c.function.name, arguments: typeof c.function.arguments === 'string' ? c.function.arguments : JSON.stringify(c.function.arguments) } })) } : {}),
      ...(m.tool_call_id ? { tool_call_id: m.tool_call_id } : {}),
      ...(m.tool_name ? { name: m.tool_name } : {}),
    })))
    return runNative(app.leases, request, reply, {
      kind: 'chat',
      model: body.model,
      endpoint: 'chat',
      stream: body.stream ?? true,
      options: body.options,
      keepAliveMs: parseKeepAlive(body.keep_alive),
      ...(logprobs ? { logprobs } : {}),
      // Ollama truncates by default; `truncate: false` answers a conversation too long with the error instead.
      ...(body.truncate !== false ? { shorten: (err: ContextExceededError) => truncateHistory(history, err) } : {}),
      // System messages as the model's template takes them (chat-system-messages.ts), from the history as it is then.
      shape: async (runtimeBody, lease) => ({ ...runtimeBody, messages: placeSystemMessages(history, await systemPlacement(lease)) }),
      body: {
        messages: history,
        ...(body.tools ? { tools: body.tools } : {}),
        ...thinkFields(record, body.think),
        ...(format ? { response_format: format } : {}),
      },
    })
  })
}

export default chat
