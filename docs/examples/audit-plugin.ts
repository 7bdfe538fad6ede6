// An example audit and billing sink, typed by llamagate's published API (`llamagate/plugin`): one JSON line per
// inference request, whichever API it came by, appended to a file once its answer went out: the model that
// answered, the API key's name, the surface, its tokens and how long it took. Failed requests get a line too.
//
//   plugins:
//     - path: llamagate-plugin-audit
//       options: { file: /var/log/llamagate/audit.jsonl }
import { appendFile } from 'node:fs/promises'
import { definePlugin, Type, type CallRequest } from 'llamagate/plugin'

export default definePlugin({
  name: 'audit',
  options: Type.Object({ file: Type.String({ minLength: 1 }) }, { additionalProperties: false }),
  register (app, options) {
    // One append per line, in the order requests end: lines are short enough to be written whole.
    const write = (line: object): Promise<void> => appendFile(options.file, `${JSON.stringify(line)}\n`)
    const who = (request: Readonly<CallRequest>) => ({ model: request.model, key: request.key, surface: request.surface, route: request.route })
    app.callHooks.add({
      name: 'audit',
      async after ({ request, usage, timings, streamed, cut }) {
        await write({
          time: new Date().toISOString(), ...who(request), streamed, cut,
          prompt_tokens: usage.promptTokens, completion_tokens: usage.completionTokens,
          duration_ms: Math.round(timings.durationMs),
        })
      },
      async failure (error, request) {
        await write({ time: new Date().toISOString(), ...who(request), error: (error as Error).message })
      },
    })
  },
})
