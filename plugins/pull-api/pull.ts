import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { clientGone, EventStream, streamFormatOf } from '../../core/server/event-stream.js'
import { linkedSignal } from '../../core/base/linked-signal.js'
import { ModelOrName, parseModelName, requestedModel } from '../../core/base/model-name.js'
import { OptionsSchema } from '../../core/config/options-schema.js'

// `name` is what ollama-js's pull() sends; Ollama's server reads either.
const PullBody = ModelOrName({
  stream: Type.Optional(Type.Boolean()),
  // Ollama's client sends it; there is nothing insecure to allow here.
  insecure: Type.Optional(Type.Boolean()),
  // The GGUF type a SafeTensors model is converted to (default: default_options.dtype).
  options: Type.Optional(Type.Object({ dtype: OptionsSchema.properties.dtype })),
})

/**
 * POST /api/pull: a model from the hub (the download plugin's puller), as a stream of progress events or one answer
 * at the end. A shutdown's drain lets it finish; one that gives up waiting cuts it.
 */
const pull: FastifyPluginAsyncTypebox = async (app) => {
  app.post('/api/pull', { config: { scope: 'manage' }, schema: { body: PullBody } }, async (request, reply) => {
    const model = requestedModel(request.body)
    parseModelName(model)
    if (request.body.stream === false) {
      const signal = linkedSignal([clientGone(reply), app.lifecycle.cutSignal])
      try {
        await app.puller.pull(model, () => {}, signal.signal, request.body.options?.dtype)
      } finally {
        signal.unlink()
      }
      return { status: 'success' }
    }
    const stream = new EventStream(request, reply, streamFormatOf(request))
    stream.open()
    // A shutdown's drain lets a pull finish; one that gives up waiting cuts it (what is downloaded is kept). Linked
    // by hand, not AbortSignal.any: the cut signal lives as long as the server (core/base/linked-signal.ts).
    const signal = linkedSignal([stream.signal, app.lifecycle.cutSignal])
    try {
      await app.puller.pull(model, (event) => { stream.send(event) }, signal.signal, request.body.options?.dtype)
      stream.end()
    } catch (err) {
      stream.fail(err)
    } finally {
      signal.unlink()
    }
    return reply
  })
}

export default pull
