// An example backend of one's own (`app.backends.add`), typed by `llamagate/plugin`: models that answer with the
// last thing said to them, in OpenAI's chat-completions and completions shapes, whole or streamed. Every surface
// (Ollama's, OpenAI's, Anthropic's) reaches them, with keys, quotas and usage as for a local model:
//
//   plugins:
//     - path: llamagate-plugin-echo
//       options: { models: [echo/parrot] }
import { definePlugin, Type } from 'llamagate/plugin'

type Part = string | Array<{ text?: string }> | null | undefined

/** The text of a message's content, or of a prompt. */
function textOf (content: Part): string {
  return typeof content === 'string' ? content : (content ?? []).map((part) => part.text ?? '').join('')
}

export default definePlugin({
  name: 'echo-backend',
  options: Type.Object({
    models: Type.Array(Type.String({ minLength: 1 }), { minItems: 1, default: ['echo/parrot'] }),
  }, { additionalProperties: false }),
  register (app, options) {
    app.backends.add({
      name: 'echo',
      models: () => options.models,
      async fetch (path, body) {
        const chat = path === '/v1/chat/completions'
        const messages = (body.messages ?? []) as Array<{ content: Part }>
        const said = chat ? textOf(messages.at(-1)?.content) : textOf(body.prompt as Part)
        // One word a token; max_tokens cuts the answer as a model's limit would.
        const words = `echo: ${said}`.split(/(?<= )/)
        const limit = typeof body.max_tokens === 'number' && body.max_tokens >= 0 ? body.max_tokens : words.length
        const answer = words.slice(0, limit)
        const finish = answer.length < words.length ? 'length' : 'stop'
        const usage = { prompt_tokens: said.split(' ').length, completion_tokens: answer.length, total_tokens: said.split(' ').length + answer.length }
        const head = { id: `echo-${Date.now()}`, created: Math.floor(Date.now() / 1000), model: body.model }
        if (body.stream !== true) {
          const choice = chat ? { index: 0, message: { role: 'assistant', content: answer.join('') }, finish_reason: finish } : { index: 0, text: answer.join(''), finish_reason: finish }
          return Response.json({ ...head, object: chat ? 'chat.completion' : 'text_completion', choices: [choice], usage })
        }
        const piece = (text: string, reason: string | null): object => chat
          ? { index: 0, delta: { content: text }, finish_reason: reason }
          : { index: 0, text, finish_reason: reason }
        const object = chat ? 'chat.completion.chunk' : 'text_completion'
        const events = [...answer.map((word) => [piece(word, null)]), [piece('', finish)]]
          .map((choices) => ({ ...head, object, choices }))
        if ((body.stream_options as { include_usage?: boolean } | undefined)?.include_usage === true) events.push({ ...head, object, choices: [], usage } as typeof events[number])
        const sse = events.map((event) => `data: ${JSON.stringify(event)}\n\n`).join('') + 'data: [DONE]\n\n'
        return new Response(sse, { headers: { 'content-type': 'text/event-stream' } })
      },
    })
  },
})
