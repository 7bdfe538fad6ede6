// An example guardrail, typed by llamagate's published API (`llamagate/plugin`): call hooks see every inference
// request and answer whichever API it came by (native /api/chat and /api/generate, OpenAI chat, completions and
// Responses, Anthropic Messages). It refuses a request whose input names a banned word (403, in the surface's own
// error shape) and redacts card-number-like digits in the answer, streamed or whole. Compile it (tsc) and install
// the package beside config.yaml:
//
//   plugins:
//     - path: llamagate-plugin-guardrail
//       options: { banned: [classified], redaction: '[card number]' }
import { definePlugin, ForbiddenError, Type, type CallRequest } from 'llamagate/plugin'

// 13 to 19 digits, maybe grouped by spaces or dashes: what a card number looks like.
const CARD_NUMBER = /\b\d(?:[ -]?\d){12,18}\b/g

/** The request's input as text: its messages (any surface's parts), system prompt and raw prompt. */
function inputText (request: CallRequest): string {
  return JSON.stringify([request.messages ?? null, request.system ?? null, request.prompt ?? null]).toLowerCase()
}

export default definePlugin({
  name: 'guardrail',
  options: Type.Object({
    banned: Type.Array(Type.String({ minLength: 1 }), { default: [] }),
    redaction: Type.String({ default: '[redacted]' }),
  }, { additionalProperties: false }),
  register (app, options) {
    const banned = options.banned.map((word) => word.toLowerCase())
    app.callHooks.add({
      name: 'guardrail',
      before (request) {
        const input = inputText(request)
        const word = banned.find((w) => input.includes(w))
        if (word !== undefined) throw new ForbiddenError(`the request names "${word}", which this server does not answer`, 'content_policy')
      },
      // Each streamed piece, and a whole answer as one piece: the same redaction either way. A number split across
      // two streamed pieces is not seen whole here (pii-filter-plugin.ts holds back a trailing run of digits until the
      // next piece, or the answer's end, shows where it ends).
      piece (piece) {
        if (piece.kind !== 'tool_call') piece.text = piece.text.replace(CARD_NUMBER, options.redaction)
      },
    })
  },
})
