import t from 'tap'
import { Redaction } from '../../../plugins/upstreams/redaction.js'

const KEY = 'sk-upstream-0123456789'

t.test('text: the key, a whole Bearer header and the key as JSON writes it are cut; short values are not secrets', async (t) => {
  const redaction = Redaction.of([`Bearer ${KEY}`])!
  t.equal(redaction.text(`you sent Bearer ${KEY}; again: ${KEY}${KEY}`), 'you sent <redacted>; again: <redacted><redacted>')
  const quoted = Redaction.of(['k"ey\\1'])!
  t.equal(quoted.text(JSON.stringify({ said: 'k"ey\\1' })), '{"said":"<redacted>"}', 'a key with a quote, inside a JSON string')
  t.equal(Redaction.of(['abc']), null, 'three characters would cut words out of answers')
  t.equal(Redaction.of([]), null)
})

t.test('a stream: the key cut wherever the pieces split it, nothing else changed or held', async (t) => {
  const text = `data: {"error":"bad key ${KEY}"}\n\ndata: {"n":1,"k":"${KEY}"}\n\n`
  const expected = text.replaceAll(KEY, '<redacted>')
  const bytes = Buffer.from(text)
  for (let cut = 1; cut < bytes.length; cut++) {
    for (const second of [cut + 1, cut + 7]) {
      const stream = Redaction.of([KEY])!.stream()
      const out: Buffer[] = []
      for (const piece of [bytes.subarray(0, cut), bytes.subarray(cut, second), bytes.subarray(second)]) {
        out.push(stream.push(piece) ?? piece)
      }
      out.push(stream.end())
      if (Buffer.concat(out).toString() !== expected) { t.fail(`cut at ${cut} and ${second}`); return }
    }
  }
  t.pass('every cut in two or three pieces')
  const stream = Redaction.of([KEY])!.stream()
  t.equal(stream.push(Buffer.from('data: {"a":1}\n\n')), null, 'a piece with nothing to cut goes as it came')
  t.equal(stream.push(Buffer.from('data: {"a":"s'))?.toString(), 'data: {"a":"', 'a piece that ends as the key starts keeps those bytes back')
  t.equal(stream.push(Buffer.from('ay"}\n\n'))?.toString(), 'say"}\n\n', 'and sends them with the next, once it shows it is no key')
  t.equal(stream.end().length, 0, 'nothing left at the end')
})
