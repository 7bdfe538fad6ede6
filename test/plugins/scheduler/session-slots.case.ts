import t from 'tap'
import { SessionSlots } from '../../../plugins/scheduler/session-slots.js'

t.test('a session keeps its slot while it is free; a busy one, or one llama-server placed, falls back to its choice', async (t) => {
  const slots = new SessionSlots(4)
  const a = slots.take('a')
  const b = slots.take('b')
  t.same([a, b], [0, 1], 'new sessions get slots no session holds')
  slots.release(a)
  slots.release(b)
  t.equal(slots.take('b'), 1, 'b again: its slot')
  t.equal(slots.take('b'), null, 'b twice at once: its slot is busy, llama-server places the second')
  slots.release(null)
  slots.release(1)
  const free = slots.take(undefined)
  t.equal(free, null, 'a request without a session: llama-server places it')
  t.equal(slots.take('a'), null, 'while it runs, no slot is known to be free: no pinning')
  slots.release(null)
  slots.release(null)
  t.equal(slots.take('a'), 0, 'once it is done, a\'s slot again')
})

t.test('a new session takes the slot seen least recently; at most one owner per slot, whatever the number of ids', async (t) => {
  const slots = new SessionSlots(2)
  for (const s of ['a', 'b']) slots.release(slots.take(s))
  slots.release(slots.take('a'))
  t.equal(slots.take('c'), 1, 'c takes b\'s slot: b was seen before a')
  slots.release(1)
  t.equal(slots.ownerOf(1), 'c')
  t.equal(slots.take('b'), 0, 'b lost its slot: it takes the one seen least recently now (a\'s)')
  slots.release(0)
  for (let i = 0; i < 10_000; i++) slots.release(slots.take(`s${i}`))
  const owners = [slots.ownerOf(0), slots.ownerOf(1)]
  t.same(owners.sort(), ['s9998', 's9999'], '10,000 sessions later, two are kept: one per slot')
})

t.test('a session used again is the most recent: the one seen least recently gives up its slot', async (t) => {
  const slots = new SessionSlots(2)
  t.equal(slots.take('a'), 0)
  slots.release(0)
  t.equal(slots.take('b'), 1)
  slots.release(1)
  t.equal(slots.take('a'), 0, 'a again, on its slot')
  slots.release(0)
  t.equal(slots.take('c'), 1, 'a new session takes b\'s slot: b was seen before a\'s last turn')
  slots.release(1)
  t.equal(slots.ownerOf(0), 'a')
  t.equal(slots.ownerOf(1), 'c')
})
