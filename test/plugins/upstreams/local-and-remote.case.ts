import t from 'tap'
import { post, serveTinyModels } from '../../helpers/inference.js'
import { until } from '../../helpers/until.js'
import { conversation, serveBack, stopBack } from './two-backs.js'

// A model stored here that two upstreams list under the same name (no prefix: replicas, or a box with the same
// models): the front is one more place for it. Each conversation stays where it started, on the front's own copy or on
// one of the backs, and conversations spread over all three; a back stopped, its conversations come to the others;
// every back stopped, the front's own copy answers what they would have.

const MODEL = 'acme/chat'

t.test('a stored model shared with upstreams listing it: every conversation in one place, the front one of them', async (t) => {
  const a = await serveBack(t)
  const b = await serveBack(t)
  const front = await serveTinyModels(t, [MODEL], {
    upstreams: [
      { name: 'a', url: a.url, kind: 'llamagate' },
      { name: 'b', url: b.url, kind: 'llamagate' },
    ],
    default_options: { num_ctx: 1024, num_parallel: 2, max_tokens: 2 },
  })
  await until('both upstreams healthy', () => ['a', 'b'].every((name) => front.app.upstreams.stateOf(name)?.healthy === true))
  const turn = (n: number, at: number): Promise<Response> => post(`${front.url}/v1/chat/completions`, { model: MODEL, messages: conversation(n, at), max_tokens: 2 })
  const N = 12
  for (let at = 0; at < 2; at++) {
    for (let n = 0; n < N; n++) t.equal((await turn(n, at)).status, 200, `conversation ${n}, turn ${at}`)
  }

  // Listed once, as the front's own.
  const tags = await (await fetch(`${front.url}/api/tags`)).json() as { models: Array<{ name: string, remote_host?: string }> }
  t.same(tags.models.map((m) => [m.name, m.remote_host]), [[MODEL, undefined]], 'one entry, the stored model')

  const where = (n: number): string => {
    const onA = a.asked.filter((q) => q === `question ${n}`).length
    const onB = b.asked.filter((q) => q === `question ${n}`).length
    return onA === 2 && onB === 0 ? 'a' : onB === 2 && onA === 0 ? 'b' : onA + onB === 0 ? 'front' : `split (a ${onA}, b ${onB})`
  }
  const placed = Array.from({ length: N }, (_, n) => where(n))
  t.notOk(placed.some((p) => p.startsWith('split')), `each conversation's turns in one place: ${placed.join(' ')}`)
  t.ok(['a', 'b', 'front'].every((p) => placed.includes(p)), `conversations on the front and on both backs: ${placed.join(' ')}`)
  const ps = await (await fetch(`${front.url}/api/ps`)).json() as { models: Array<{ name: string, where: string }> }
  t.ok(ps.models.some((m) => m.name === MODEL && m.where === 'local'), 'the front\'s own copy loaded and serving')

  // b stopped and known to be down: its conversations go to a or the front, the others stay where they were.
  await stopBack(b)
  const upstream = front.app.config.upstreams.find((u) => u.name === 'b')!
  await until('b seen down', async () => { await front.app.upstreams.recheck(upstream); return front.app.upstreams.stateOf('b')?.healthy === false })
  const askedOfA = a.asked.length
  for (let n = 0; n < N; n++) t.equal((await turn(n, 2)).status, 200, `conversation ${n}, turn 2, b down`)
  const movedToA = a.asked.slice(askedOfA)
  for (let n = 0; n < N; n++) {
    if (placed[n] === 'a') t.ok(movedToA.includes(`question ${n}`), `conversation ${n} stays on a`)
    if (placed[n] === 'front') t.notOk(movedToA.includes(`question ${n}`), `conversation ${n} stays on the front`)
  }

  // a stopped too, before any probe knows: a's conversations find no upstream left, and the front's own copy answers.
  await stopBack(a)
  const onA = placed.flatMap((p, n) => p === 'a' ? [n] : [])
  for (const n of onA) t.equal((await turn(n, 3)).status, 200, `conversation ${n}: answered here when every upstream failed`)
  const streamed = await post(`${front.url}/api/chat`, { model: MODEL, messages: conversation(onA[0]!, 4), options: { num_predict: 2 } })
  t.equal(streamed.status, 200, 'a stream too, before its first byte')
  t.match(await streamed.text(), /"done":true/)
})
