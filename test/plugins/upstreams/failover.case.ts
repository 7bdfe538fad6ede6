import t from 'tap'
import { post } from '../../helpers/inference.js'
import { until } from '../../helpers/until.js'
import { conversation, MODEL, serveBack, serveFront, stopBack } from './two-backs.js'

// Two back llamagates offer one model under one name: one stops, and the requests not yet started go to the other,
// before any probe noticed; a stream already flowing from it ends with an error event; back again, it gets its share.

const chat = (url: string, n: number, extra: Record<string, unknown> = {}): Promise<Response> =>
  post(`${url}/v1/chat/completions`, { model: MODEL, messages: conversation(n), max_tokens: 3, ...extra })

t.test('a request not yet started moves to the other upstream; one streaming ends with an error event', async (t) => {
  const a = await serveBack(t)
  const b = await serveBack(t)
  const front = await serveFront(t, a, b)

  // Six conversations, each on the upstream its start maps to: find one of a's.
  for (let n = 0; n < 6; n++) t.equal((await chat(front.url, n)).status, 200, `conversation ${n} answered`)
  const onA = [0, 1, 2, 3, 4, 5].filter((n) => a.asked.includes(`question ${n}`))
  t.ok(onA.length > 0 && onA.length < 6, `both upstreams take conversations (a: ${onA.join(', ')})`)
  const mine = onA[0]!

  // a stops; nothing has told the front's probe yet.
  await stopBack(a)
  t.equal(front.app.upstreams.stateOf('a')?.healthy, true, 'the probe has not noticed yet')
  const bBefore = b.asked.length
  // First a stream of a's conversation (relayed as it comes): it had not begun, so it moves.
  const streamed = await post(`${front.url}/v1/chat/completions`, { model: MODEL, messages: conversation(mine), max_tokens: 3, stream: true })
  t.equal(streamed.status, 200, 'a stream not yet started moves too')
  t.match(await streamed.text(), /data: \[DONE\]/)
  const answers = await Promise.all([0, 1, 2, 3, 4, 5].map(async (n) => (await chat(front.url, n)).status))
  t.same(answers, [200, 200, 200, 200, 200, 200], 'every request answered, none a 502')
  t.equal(b.asked.length - bBefore, 7, 'all seven on b')

  // a again, on its port: once its probe sees it, its conversations go back to it.
  const again = await serveBack(t, a.port)
  const upstream = front.app.config.upstreams.find((u) => u.name === 'a')!
  await until('a healthy again', async () => {
    await front.app.upstreams.recheck(upstream)
    return front.app.upstreams.stateOf('a')?.healthy === true
  })
  t.equal((await chat(front.url, mine)).status, 200)
  t.same(again.asked, [`question ${mine}`], 'its conversation is back on a')

  const bAfter = b.asked.length
  // A long stream from a: a goes away mid-answer, and the client gets an error event, not b's answer spliced in.
  const flowing = await post(`${front.url}/v1/chat/completions`, { model: MODEL, messages: conversation(mine), max_tokens: 3000, stream: true })
  t.equal(flowing.status, 200)
  const reader = flowing.body!.getReader()
  let text = new TextDecoder().decode((await reader.read()).value)
  await stopBack(again)
  for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) text += new TextDecoder().decode(chunk.value)
  t.notMatch(text, /data: \[DONE\]/, 'the stream did not finish')
  t.match(text, /"error":\{[^}]*upstream \\?"a\\?"/, 'it ends with an error event naming the upstream')
  t.equal(again.asked.length, 2, 'and was not sent again elsewhere: b never saw it')
  t.equal(b.asked.length, bAfter, 'b was not asked for it')
  t.equal((await chat(front.url, mine)).status, 200, 'the next request goes to b')
})
