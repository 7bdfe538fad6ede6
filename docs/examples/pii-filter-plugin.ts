// An example PII filter, typed by llamagate's published API (`llamagate/plugin`): phone numbers in every answer,
// streamed or whole, on every surface, replaced before they reach the client. A streamed number may come split
// across pieces ("ring me at 555", "-0100"): each piece's trailing run of digits is held back until the next piece
// shows where it ends, and what is still held when the answer ends is released, redacted, by the `end` hook.
//
//   plugins:
//     - path: llamagate-plugin-pii-filter
//       options: { redaction: '[phone]' }
import { definePlugin, Type, type CallRequest } from 'llamagate/plugin'

// 7 digits or more, maybe grouped by spaces, dots, dashes or brackets, maybe after a +: what a phone number looks like.
const PHONE = /\+?\(?\d(?:[ ().-]{0,2}\d){6,}/g
// The end of a text that the next piece may continue into a phone number: a trailing run of digits and separators.
const OPEN_END = /\+?\(?\d[\d ().-]*$/

export default definePlugin({
  name: 'pii-filter',
  options: Type.Object({ redaction: Type.String({ default: '[phone]' }) }, { additionalProperties: false }),
  register (app, options) {
    const redact = (text: string): string => text.replace(PHONE, options.redaction)
    // What each answer holds back, by its request: the same object comes to every hook of one call.
    const held = new WeakMap<Readonly<CallRequest>, string>()
    app.callHooks.add({
      name: 'pii-filter',
      // The same for a streamed piece and a whole answer's one piece: a whole answer's tail is released at its end too.
      piece (piece, request) {
        if (piece.kind !== 'text') return
        const text = (held.get(request) ?? '') + piece.text
        const open = OPEN_END.exec(text)?.[0] ?? ''
        held.set(request, open)
        piece.text = redact(text.slice(0, text.length - open.length))
      },
      // The answer ended (or was cut): what is still held back goes out, redacted, as its last text.
      end (request) {
        const rest = held.get(request) ?? ''
        held.delete(request)
        return redact(rest)
      },
    })
  },
})
