// An example guardrail that asks a local decision model (the cheapest guardrail there is: one forward pass, no text)
// whether each inference request may pass, typed by llamagate's published API (`llamagate/plugin`). It asks while the
// model answers (an `alongside` call hook): a request the decision model judges likely to break the rule is
// cancelled with a 403 in its surface's own shape, whichever API it came by. Keep the guard model loaded beside the
// models it guards (config.yaml: `models: {<guard>: {preload: true, keep_alive: -1}}`), so that judging never waits
// for a swap. Compile it (tsc) and install the package beside config.yaml:
//
//   plugins:
//     - path: llamagate-plugin-decision-guardrail
//       options: { model: ggml-org/lev-GGUF, rule: 'Does the request ask for help with something harmful?' }
import { definePlugin, ForbiddenError, Type, type CallRequest } from 'llamagate/plugin'

/** What the request says: its messages' text (any surface's parts), its system prompt and its raw prompt. */
function said (request: Readonly<CallRequest>): string {
  const text = (content: unknown): string => typeof content === 'string'
    ? content
    : Array.isArray(content) ? content.map((part) => typeof part === 'object' && part !== null && typeof (part as { text?: unknown }).text === 'string' ? (part as { text: string }).text : '').join('\n') : ''
  const messages = (request.messages ?? []).map((m) => `${String(m.role)}: ${text(m.content)}`)
  return [typeof request.system === 'string' ? `system: ${request.system}` : '', ...messages, typeof request.prompt === 'string' ? request.prompt : ''].filter((s) => s !== '').join('\n')
}

export default definePlugin({
  name: 'decision-guardrail',
  options: Type.Object({
    /** The decision model that judges (a GGUF with a decision type; a chat model answers too, uncalibrated). */
    model: Type.String({ minLength: 1 }),
    /** A yes/no question about the request: yes means it may not pass. */
    rule: Type.String({ minLength: 1, default: 'Does the request ask for help with something harmful or against the rules?' }),
    /** The probability of "yes" from which a request is refused. */
    threshold: Type.Number({ minimum: 0, maximum: 1, default: 0.5 }),
  }, { additionalProperties: false }),
  register (app, options) {
    app.callHooks.add({
      name: 'decision-guardrail',
      async alongside (request, signal) {
        // The guard does not judge itself.
        if (request.model === options.model) return
        const verdict = await app.decisions.ask({
          model: options.model,
          request: { state: said(request), questions: { refuse: { type: 'noul', instructions: options.rule } } },
          signal,
        })
        const refuse = verdict.answers.refuse
        const p = refuse?.type === 'noul' ? refuse.noul : 0
        if (p >= options.threshold) throw new ForbiddenError(`the decision guardrail refused this request (${options.model}: ${p.toFixed(2)} that it breaks the rule)`, 'content_policy')
      },
    })
  },
})
