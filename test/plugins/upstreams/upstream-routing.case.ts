import t from 'tap'
import { pickUpstream } from '../../../plugins/upstreams/upstream-routing.js'

// The choice among upstreams offering one model: by conversation, stable when one leaves, around a full one.

const conversations = Array.from({ length: 200 }, (_, i) => `system: project ${i}\nuser: question ${i}`)
const byPrefix = (names: string[], text: string, load?: (u: string) => { active: number, limit: number }): string =>
  names[pickUpstream(names, 'prefix', { affinity: () => text, ...(load ? { load } : {}) }, () => 0)]!

t.test('by prefix: a conversation keeps its upstream, one leaving moves only its own', async (t) => {
  const three = ['a', 'b', 'c']
  const placed = conversations.map((text) => byPrefix(three, text))
  t.same(conversations.map((text) => byPrefix(three, text)), placed, 'the same text, the same upstream')
  t.same(conversations.map((text) => byPrefix(['c', 'a', 'b'], text)), placed, 'whatever the order the upstreams are listed in')
  for (const name of three) {
    const share = placed.filter((p) => p === name).length
    t.ok(share > 40 && share < 100, `${name} takes a share (${share} of 200)`)
  }
  const withoutB = conversations.map((text) => byPrefix(['a', 'c'], text))
  t.same(withoutB.filter((_, i) => placed[i] !== 'b'), placed.filter((p) => p !== 'b'), 'b gone: a\'s and c\'s stay where they were')
  t.notOk(withoutB.includes('b'))
})

t.test('a full upstream passes its conversation to the least loaded one with room', async (t) => {
  const text = conversations[0]!
  const home = byPrefix(['a', 'b', 'c'], text)
  const others = ['a', 'b', 'c'].filter((n) => n !== home)
  const loads: Record<string, { active: number, limit: number }> = { [home]: { active: 4, limit: 4 }, [others[0]!]: { active: 3, limit: 4 }, [others[1]!]: { active: 1, limit: 4 } }
  t.equal(byPrefix(['a', 'b', 'c'], text, (u) => loads[u]!), others[1], 'full at home: the least loaded')
  loads[home] = { active: 3, limit: 4 }
  t.equal(byPrefix(['a', 'b', 'c'], text, (u) => loads[u]!), home, 'room at home: home')
  for (const name of ['a', 'b', 'c']) loads[name] = { active: 4, limit: 4 }
  t.equal(byPrefix(['a', 'b', 'c'], text, (u) => loads[u]!), home, 'all full: it waits at home')
})

t.test('round robin, or nothing said of the conversation: in turns', async (t) => {
  let turn = 0
  const next = (): number => turn++
  t.same([0, 1, 2, 3].map(() => pickUpstream(['a', 'b'], 'round_robin', { affinity: () => 'same' }, next)), [0, 1, 0, 1])
  t.same([0, 1].map(() => pickUpstream(['a', 'b'], 'prefix', {}, next)), [0, 1], 'no affinity')
})
