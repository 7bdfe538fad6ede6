import t from 'tap'
import { post } from '../../helpers/inference.js'
import { conversation, MODEL, serveBack, serveFront } from './two-backs.js'

// Two back llamagates offer one model: each conversation's turns stay on one of them (its prompt cache holds the
// conversation), and conversations spread over both; round robin, asked for, alternates instead.

const turnOf = (url: string, n: number, turn: number): Promise<Response> =>
  post(`${url}/v1/chat/completions`, { model: MODEL, messages: conversation(n, turn), max_tokens: 2 })

t.test('by conversation prefix: every turn of a conversation on one upstream, conversations on both', async (t) => {
  const a = await serveBack(t)
  const b = await serveBack(t)
  const front = await serveFront(t, a, b)
  for (let turn = 0; turn < 3; turn++) {
    for (let n = 0; n < 8; n++) t.equal((await turnOf(front.url, n, turn)).status, 200)
  }
  // Through /api/chat too: the same conversation, the same upstream.
  const native = await post(`${front.url}/api/chat`, { model: MODEL, messages: conversation(0, 3), stream: false, options: { num_predict: 2 } })
  t.equal(native.status, 200)
  const counts = (back: { asked: string[] }): number[] => [0, 1, 2, 3, 4, 5, 6, 7].map((n) => back.asked.filter((q) => q === `question ${n}`).length)
  const onA = counts(a)
  const onB = counts(b)
  for (let n = 0; n < 8; n++) {
    t.ok((onA[n] === 0) !== (onB[n] === 0), `conversation ${n}: all its turns on one upstream (a ${onA[n]}, b ${onB[n]})`)
  }
  t.equal(onA[0]! + onB[0]!, 4, 'conversation 0: three turns and its /api/chat')
  const usedA = onA.filter((c) => c > 0).length
  t.ok(usedA > 0 && usedA < 8, `conversations spread over both (${usedA} of 8 on a)`)
})

t.test('round robin: the turns alternate', async (t) => {
  const a = await serveBack(t)
  const b = await serveBack(t)
  const front = await serveFront(t, a, b, 'round_robin')
  for (let turn = 0; turn < 4; turn++) t.equal((await turnOf(front.url, 0, turn)).status, 200)
  t.equal(a.asked.length, 2, 'two turns on a')
  t.equal(b.asked.length, 2, 'two on b')
})
