// The one per-key line every lease source shares: a freed place goes round the API keys waiting for it, so a key
// flooding a line delays another key's request by a turn, not by its whole backlog. Without keys the line stays first
// come, first served; the line's own rules (its length, a key's queue share) are checked before a request joins it.
import t from 'tap'
import { QueueFullError, TooManyRequestsError } from '../../../core/base/errors.js'
import { KeyLine, type Seat } from '../../../plugins/leases/key-line.js'
import { queueShareRule } from '../../../plugins/quotas/queue-share.js'

/** A line with one place, taken: every request after it waits. */
function busyLine (): KeyLine {
  const line = new KeyLine(1)
  line.tryTake()
  return line
}

/** Queues a request of `key` (undefined: none) and records its name in `granted` when it gets the slot. */
function queue (instance: KeyLine, granted: string[], name: string, key?: string, signal?: AbortSignal): { ticket: object, done: Promise<boolean> } {
  const ticket = {}
  const done = instance.enqueue(signal, ticket, key)
  done.then((ok) => { if (ok) granted.push(name) }, () => {})
  return { ticket, done }
}

/** Hands the slot over `n` times, letting each grant's promise settle. */
async function handOver (instance: KeyLine, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    instance.handOver()
    await new Promise((resolve) => setImmediate(resolve))
  }
}

t.test('KeyLine: turns go round the keys, positions say the grants ahead, and the order repeats round after round', async (t) => {
  const instance = busyLine()
  const granted: string[] = []
  const a = [1, 2, 3, 4].map((i) => queue(instance, granted, `a${i}`, 'alice'))
  const b = queue(instance, granted, 'b1', 'bob')
  const c = [1, 2].map((i) => queue(instance, granted, `c${i}`, 'carol'))
  t.equal(instance.queued, 7)
  t.same([instance.queuedOf('alice'), instance.queuedOf('bob'), instance.queuedOf('carol'), instance.queuedOf(undefined)], [4, 1, 2, 0])
  const expected = ['a1', 'b1', 'c1', 'a2', 'c2', 'a3', 'a4']
  const positions = Object.fromEntries([...a.map((q, i) => [`a${i + 1}`, q]), ['b1', b], ...c.map((q, i) => [`c${i + 1}`, q])]
    .map(([name, q]) => [name as string, instance.positionOf((q as { ticket: object }).ticket)]))
  t.same(expected.map((name) => positions[name]), [1, 2, 3, 4, 5, 6, 7], 'each position is the number of grants up to it')
  await handOver(instance, 7)
  t.same(granted, expected, 'granted in the order the positions said')
  t.equal(instance.queued, 0)
  t.equal(instance.active, 1, 'the slot stayed taken through each hand-over')
  instance.handOver()
  t.ok(instance.idle, 'freed once nobody waits')
})

t.test('KeyLine: a key arriving while another floods goes next, and one served least recently goes before one just served', async (t) => {
  const instance = busyLine()
  const granted: string[] = []
  for (let i = 1; i <= 5; i++) queue(instance, granted, `a${i}`, 'alice')
  await handOver(instance, 2)
  t.same(granted, ['a1', 'a2'])
  const b = queue(instance, granted, 'b1', 'bob')
  t.equal(instance.positionOf(b.ticket), 1, 'next, ahead of the flood')
  await handOver(instance, 1)
  t.same(granted, ['a1', 'a2', 'b1'])
  // Bob asks again at once: alice was served longer ago, so she goes first.
  const b2 = queue(instance, granted, 'b2', 'bob')
  t.equal(instance.positionOf(b2.ticket), 2)
  await handOver(instance, 4)
  t.same(granted, ['a1', 'a2', 'b1', 'a3', 'b2', 'a4', 'a5'])
})

t.test('KeyLine: without keys, first come, first served; a request that leaves the line leaves no gap', async (t) => {
  const instance = busyLine()
  const granted: string[] = []
  const leaving = new AbortController()
  const queued = [1, 2, 3, 4].map((i) => queue(instance, granted, `r${i}`, undefined, i === 2 ? leaving.signal : undefined))
  t.same(queued.map((q) => instance.positionOf(q.ticket)), [1, 2, 3, 4])
  leaving.abort(new Error('client gone'))
  await t.rejects(queued[1]!.done, { message: 'client gone' })
  t.same(queued.map((q) => instance.positionOf(q.ticket)), [1, 0, 2, 3], 'the one that left is nowhere; those after it moved up')
  t.equal(instance.queued, 3)
  await handOver(instance, 3)
  t.same(granted, ['r1', 'r3', 'r4'])
})

t.test('KeyLine: dismissed waiters of every key hear false', async (t) => {
  const instance = busyLine()
  const granted: string[] = []
  const all = [queue(instance, granted, 'a', 'alice'), queue(instance, granted, 'b', 'bob'), queue(instance, granted, 'n')]
  instance.dismiss()
  t.same(await Promise.all(all.map((q) => q.done)), [false, false, false])
  t.equal(instance.queued, 0)
  t.same(granted, [])
})


t.test('KeyLine.take: a free place at once; a full line refused; a key past its queue share refused, others let in', async (t) => {
  const line = new KeyLine(1)
  const terms = { model: 'acme/tiny', queueLength: 4, oneRequestMs: () => 2500 }
  const alice = { key: 'alice', promptTokens: 0, generatedTokens: 0, mayQueue: queueShareRule('alice', 0.5) }
  t.equal(await line.take(terms, { usage: alice }), true, 'the free place, taken at once')
  t.equal(line.active, 1)
  const granted: string[] = []
  const waits = [1, 2].map((i) => line.take(terms, { usage: alice }).then((ok) => { if (ok) granted.push(`a${i}`); return ok }))
  t.equal(line.queuedOf('alice'), 2, 'two of alice\'s wait: her share of a line of 4')
  await t.rejects(line.take(terms, { usage: alice }), TooManyRequestsError, 'a third of hers is past her share')
  const refusal = await line.take(terms, { usage: alice }).catch((err: TooManyRequestsError) => err)
  t.match((refusal as TooManyRequestsError).message, /alice.*acme\/tiny.*queue_share 0\.5/)
  t.equal((refusal as TooManyRequestsError).headers['Retry-After'], '3', 'one request\'s time (2.5 s), rounded up')
  const bob = { key: 'bob', promptTokens: 0, generatedTokens: 0 }
  const bobWaits = [1, 2].map((i) => line.take(terms, { usage: bob }).then((ok) => { if (ok) granted.push(`b${i}`); return ok }))
  t.equal(line.queued, 4)
  await t.rejects(line.take(terms, { usage: bob }), QueueFullError, 'the line is full (limits.queue_length)')
  for (let i = 0; i < 4; i++) { line.handOver(); await new Promise((resolve) => setImmediate(resolve)) }
  t.same(await Promise.all([...waits, ...bobWaits]), [true, true, true, true])
  t.same(granted, ['b1', 'a1', 'b2', 'a2'], 'in turns by key, bob first: alice\'s place taken at once was her turn')
  const gone = new AbortController()
  gone.abort(new Error('client gone'))
  await t.rejects(line.take(terms, { signal: gone.signal }), { message: 'client gone' }, 'an aborted request takes nothing')
  t.equal(line.active, 1, 'the place still held by the last one served')
})

/**
 * Takes a seat on `line` for a request of `key`, recording `name` in `order` when it is seated. `begins`: its answer
 * begins as soon as it holds a place, as llama-server's would (else the test says when, `Seat.begun`).
 */
function seatFor (line: KeyLine, order: string[], name: string, key?: string, early = true, begins = true): Promise<Seat | null> {
  const terms = { model: 'acme/tiny', queueLength: 16, oneRequestMs: () => 1000 }
  const usage = key === undefined ? undefined : { key, promptTokens: 0, generatedTokens: 0 }
  return line.takeSeat(terms, { early, ...(usage ? { usage } : {}) }).then((seat) => {
    void seat?.seated.then(() => {
      order.push(name)
      if (begins) seat.begun()
    })
    if (begins && seat?.early === false) seat.begun()
    return seat
  })
}
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))

t.test('KeyLine with early places: handed on one at a time, once every request granted before has begun; seated oldest first as places free', async (t) => {
  const line = new KeyLine(2, 2)
  const seated: string[] = []
  const ask = (name: string): Promise<Seat | null> => seatFor(line, seated, name, undefined, true, false)
  const s1 = await ask('s1')
  const s2 = await ask('s2')
  t.same([s1!.early, s2!.early], [false, false], 'two places')
  let e1Seat: Seat | null = null
  const e1 = ask('e1').then((seat) => (e1Seat = seat))
  s1!.begun()
  await settle()
  t.equal(e1Seat, null, 'the next waits in line while a request granted before has not begun: the backend might read it first')
  t.same([line.active, line.queued], [2, 1])
  s2!.begun()
  t.equal((await e1)!.early, true, 'every one begun: the next is handed on early')
  let e2Seat: Seat | null = null
  const e2 = ask('e2').then((seat) => (e2Seat = seat))
  await settle()
  t.equal(e2Seat, null, 'one at a time: the next waits until the one handed on has begun')
  e1Seat!.begun()
  t.equal((await e2)!.early, true, 'then it is handed on too')
  await settle()
  t.same(seated, ['s1', 's2', 'e1'], 'one handed on that has begun holds one of the backend\'s places: its books start')
  t.same([line.active, line.queued], [2, 2], 'on the line it waits until a place is given back')
  const w1 = ask('w1')
  t.equal(line.queued, 3, 'the next waits in line: the early places are taken')
  s1!.leave()
  t.same([line.active, line.queued], [2, 2], 'a place given back seats the oldest handed on')
  t.equal(e1Seat!.early, false)
  await settle()
  e2Seat!.begun()
  const w1Seat = await w1
  t.equal(w1Seat!.early, true, 'and its early place goes to the next in line once the one before has begun')
  s2!.leave()
  w1Seat!.begun()
  e1Seat!.leave()
  await settle()
  t.same(seated, ['s1', 's2', 'e1', 'e2', 'w1'])
  t.same([line.active, line.queued], [2, 0])
  e2Seat!.leave(); w1Seat!.leave()
  t.ok(line.idle, 'free once every seat is given back')
})

t.test('KeyLine with early places: one that leaves before it is seated gives its early place to the next in turn, never a place', async (t) => {
  const line = new KeyLine(1, 1)
  const seated: string[] = []
  const holder = await seatFor(line, seated, 'holder', 'alice')
  const early = await seatFor(line, seated, 'early', 'alice')
  const next = seatFor(line, seated, 'next', 'bob')
  t.equal(line.queuedOf('alice'), 1, 'a key\'s waiting requests count the one handed on')
  early!.leave()
  const nextSeat = await next
  t.equal(nextSeat!.early, true, 'the next in turn is handed on in its place')
  t.equal(line.active, 1, 'the place stays the holder\'s')
  early!.leave()
  t.equal(line.queued, 1, 'a second leave does nothing')
  holder!.leave()
  await settle()
  t.same(seated, ['holder', 'next'], 'the one that left was never seated')
  nextSeat!.leave()
  t.ok(line.idle)
})

t.test('KeyLine with early places: turns go round the keys in the order requests are handed on; the line\'s rules count those handed on', async (t) => {
  const line = new KeyLine(1, 1)
  const seated: string[] = []
  const seats = new Map<string, Seat>()
  const ask = (name: string, key: string): void => { void seatFor(line, seated, name, key).then((seat) => seats.set(name, seat!)) }
  for (let i = 0; i < 5; i++) ask(`a${i}`, 'alice')
  ask('b0', 'bob')
  await settle()
  // The one seated last holds the place: it gives it back, and the next is seated.
  for (let i = 0; i < 5; i++) {
    seats.get(seated.at(-1)!)!.leave()
    await settle()
  }
  t.same(seated, ['a0', 'b0', 'a1', 'a2', 'a3', 'a4'], 'bob goes on the first turn: alice\'s first, at once, was hers')
  const shared = new KeyLine(1, 1)
  const terms = { model: 'acme/tiny', queueLength: 4, oneRequestMs: () => 1000 }
  const carol = { key: 'carol', promptTokens: 0, generatedTokens: 0, mayQueue: queueShareRule('carol', 0.5) }
  const first = (await shared.takeSeat(terms, { usage: carol, early: true }))!
  t.equal(first.early, false)
  first.begun()
  t.equal((await shared.takeSeat(terms, { usage: carol, early: true }))!.early, true)
  void shared.takeSeat(terms, { usage: carol, early: true })
  await t.rejects(shared.takeSeat(terms, { usage: carol, early: true }), TooManyRequestsError, 'her share of a line of 4 is 2 waiting, the one handed on among them')
  void shared.takeSeat(terms, { early: true })
  void shared.takeSeat(terms, { early: true })
  await t.rejects(shared.takeSeat(terms, { early: true }), QueueFullError, 'the line holds 4 waiting, the one handed on among them')
})

t.test('KeyLine with early places: one that may not be handed on (a whole answer) waits for a place, keeping its turn', async (t) => {
  const line = new KeyLine(1, 1)
  const seated: string[] = []
  const seats = new Map<string, Seat>()
  const ask = (name: string, key: string, early = true): void => { void seatFor(line, seated, name, key, early).then((seat) => seats.set(name, seat!)) }
  ask('a0', 'alice')
  ask('whole', 'bob', false)
  ask('a1', 'alice')
  await settle()
  t.same([line.active, line.queued], [1, 2], 'nothing handed on: the whole answer is first in line')
  seats.get('a0')!.leave()
  await settle()
  t.same(seated, ['a0', 'whole'], 'it takes the place that freed')
  t.equal(seats.get('a1')!.early, true, 'and the next is handed on behind it')
  seats.get('whole')!.leave()
  await settle()
  t.same(seated, ['a0', 'whole', 'a1'])
  const late = new KeyLine(1, 1)
  const order: string[] = []
  const lateSeats = new Map<string, Seat>()
  for (const [name, key, early] of [['h', 'alice', true], ['e', 'alice', true], ['w', 'bob', false], ['x', 'carol', true]] as const) {
    void seatFor(late, order, name, key, early).then((seat) => lateSeats.set(name, seat!))
  }
  await settle()
  t.equal(late.queued, 3, 'nothing handed on: alice\'s turn was h\'s, and the whole answer\'s comes first, which nobody passes')
  lateSeats.get('h')!.leave()
  await settle()
  t.same(order, ['h', 'w'], 'the whole answer takes the place that freed')
  t.equal(lateSeats.get('x')!.early, true, 'then the next in turn (carol, not yet served) is handed on')
  lateSeats.get('w')!.leave()
  await settle()
  t.same(order, ['h', 'w', 'x'], 'and seated first')
  t.equal(lateSeats.get('e')!.early, true, 'alice\'s second is handed on behind it')
})

t.test('KeyLine.take: a place taken at once is a turn too, so after an idle spell two keys alternate from the first', async (t) => {
  const line = new KeyLine(1)
  const terms = { model: 'acme/tiny', queueLength: 8, oneRequestMs: () => 1000 }
  const usage = (key: string) => ({ key, promptTokens: 0, generatedTokens: 0 })
  const first = await line.takeSeat(terms, { usage: usage('bob') })
  first!.leave()
  t.ok(line.idle, 'bob served, then an idle spell')
  const now = await line.takeSeat(terms, { usage: usage('alice') })
  t.ok(now !== null && line.active === 1, 'alice takes the free place at once')
  const granted: string[] = []
  const waits = [['alice', 'a1'], ['bob', 'b1'], ['alice', 'a2'], ['bob', 'b2']].map(([key, name]) =>
    line.take(terms, { usage: usage(key!) }).then((ok) => { if (ok) granted.push(name!) }))
  now!.leave()
  for (let i = 0; i < 3; i++) {
    await new Promise((resolve) => setImmediate(resolve))
    line.handOver()
  }
  await Promise.all(waits)
  t.same(granted, ['b1', 'a1', 'b2', 'a2'], 'bob first: alice was served last, by the place she took at once')
})
