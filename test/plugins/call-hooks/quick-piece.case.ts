import t from 'tap'
import { quickPiece } from '../../../plugins/call-hooks/quick-piece.js'

// llama-server's usual token event read where its text lies (plugins/call-hooks/quick-piece.ts): what is read so is
// only an event that carries nothing else a hook's path reads; any other is left to be parsed.

const CHAT = '/v1/chat/completions'
const token = (text: string, rest = '"created":1795767263,"id":"c2","model":"m","object":"chat.completion.chunk"'): string =>
  `data: {"choices":[{"finish_reason":null,"index":0,"delta":{"content":"${text}"}}],${rest}}\n\n`

/** The event amid others in one read, as the relay sees it: its piece, and the JSON its parse would start at. */
function read (path: string, event: string): { text: string, json: string } | null {
  const before = 'data: {"choices":[]}\n\n'
  const bytes = Buffer.from(before + event + token('after'))
  const start = Buffer.byteLength(before)
  const piece = quickPiece(path, bytes, start, start + Buffer.byteLength(event))
  return piece === null ? null : { text: piece.text, json: bytes.toString('utf8', piece.json, start + Buffer.byteLength(event) - 2) }
}

t.test('a chat token: its text, unescaped, and where its JSON starts', async (t) => {
  t.same(read(CHAT, token('hello')), { text: 'hello', json: JSON.stringify(JSON.parse(token('hello').slice(6))) })
  t.equal(read(CHAT, token('a \\"b\\" \\u00e9'))?.text, 'a "b" é')
  t.equal(read(CHAT, token('')), null, 'an empty text is no piece')
})

t.test('a token that also says usage, timings or an error is parsed, wherever the key lies after its text', async (t) => {
  for (const key of ['usage', 'timings', 'error']) {
    t.equal(read(CHAT, token('x', `"${key}":{"n":1},"id":"c2"`)), null, `${key} first`)
    t.equal(read(CHAT, token('x', `"id":"c2","${key}":{"n":1}`)), null, `${key} last`)
  }
  t.equal(read(CHAT, token('usage'))?.text, 'usage', 'a text that is such a name is read: only what follows it is looked at')
  t.equal(read(CHAT, token('x', '"id":"c2","us":1,"t":"e","e":"u"'))?.text, 'x', 'keys that only begin like them are not')
  t.equal(read(CHAT, token('x', '"id":"c2","usages":1'))?.text, 'x', 'nor one that begins with one of them without its closing quote')
})

t.test('Anthropic\'s text delta: its text after its block\'s index, its JSON after its event line', async (t) => {
  const event = 'event: content_block_delta\ndata: {"type":"content_block_delta","index":12,"delta":{"type":"text_delta","text":"hi"}}\n\n'
  t.same(read('/v1/messages', event), { text: 'hi', json: event.slice(event.indexOf('{'), -2) })
  t.equal(read('/v1/messages', event.replace('"index":12', '"index":')), null, 'no index: parsed')
  t.equal(read('/v1/completions', token('hi')), null, 'a path without a usual token shape: parsed')
})

t.test('a token cut short in its read is not read', async (t) => {
  const event = token('hello')
  const bytes = Buffer.from(event)
  t.equal(quickPiece(CHAT, bytes, 0, 40), null, 'its head past the end')
  t.equal(quickPiece(CHAT, bytes, 0, event.indexOf('hello') + 3), null, 'its text past the end')
})
