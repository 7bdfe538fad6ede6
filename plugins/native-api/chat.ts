import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { parseKeepAlive } from '../../core/keep-alive.js'
import { parseModelName } from '../../core/model-name.js'
import { normalizeRequestOptions } from '../../core/request-options.js'
import { withModelSystem } from '../storage/model-system.js'
import { imageParts, responseFormat, thinkFields, withImages } from './format.js'
import { runNative } from './native-run.js'
import { ChatBody } from './schemas.js'

const chat: FastifyPluginAsyncTypebox = async (app) => {
  app.post('/api/chat', { schema: { body: ChatBody } }, async (request, reply) => {
    const body = request.body
    parseModelName(body.model)
    const messages = body.messages ?? []
    if (messages.length === 0) {
      // Ollama's forms: no messages loads the model; with keep_alive 0 it unloads it.
      const keepAliveMs = parseKeepAlive(body.keep_alive)
      const model = app.store.get(body.model).name
      if (keepAliveMs === 0) await app.scheduler.expire(model)
      else await app.scheduler.load(model, { options: normalizeRequestOptions(body.options), keepAliveMs })
      return { model, created_at: new Date().toISOString(), message: { role: 'assistant', content: '' }, done: true, done_reason: keepAliveMs === 0 ? 'unload' : 'load' }
    }
    const record = app.store.get(body.model)
    return runNative(app.scheduler, request, reply, {
      kind: 'chat',
      model: body.model,
      endpoint: 'chat',
      stream: body.stream ?? true,
      options: body.options,
      keepAlive: body.keep_alive,
      body: {
        messages: withModelSystem(record, messages.map((m, i) => ({
          role: m.role ?? 'user',
          content: withImages(m.content ?? '', imageParts(record, m.images, `message ${i}`)),
          ...(m.tool_calls ? { tool_calls: m.tool_calls.map((c, i) => ({ id: `call_${i}`, type: 'function', function: { name: c.function.name, arguments: typeof c.function.arguments === 'string' ? c.function.arguments : JSON.stringify(c.function.arguments) } })) } : {}),
          ...(m.tool_call_id ? { tool_call_id: m.tool_call_id } : {}),
          ...(m.tool_name ? { name: m.tool_name } : {}),
        }))),
        ...(body.tools ? { tools: body.tools } : {}),
        ...thinkFields(record, body.think),
        ...(responseFormat(body.format) ? { response_format: responseFormat(body.format) } : {}),
      },
    })
  })
}

export default chat
