// Priority classes on the one line every lease source shares: high before interactive before background, the keys'
// turns within each; background work takes free places only, is never handed on early, and gives its place back to a
// request of a higher class that finds none free; a floor keeps it moving under a steady load of people.
import t from 'tap'
import { priorityOfServiceTier, priorityOfVllm, type Priority } from '../../../core/base/priority.js'
import { effectivePriority } from '../../../plugins/scheduler/request-plan.js'
import { BACKGROUND_FLOOR, KeyLine, type Seat } from '../../../plugins/leases/key-line.js'
import { PreemptedError } from '../../../plugins/leases/preempted.js'
import { askedPriority } from '../../../plugins/inference/asked-priority.js'

const TERMS = { model: 'acme/tiny', queueLength: 100, oneRequestMs: () => 1000 }

/** Asks `line` for a seat as a request of `priority` (and `key`), recording its name in `granted` once it has one. */
function ask (line: KeyLine, granted: string[], name: string, priority: Priority, key?: string, early = false): { ticket: object, seat: Promise<Seat | null> } {
  const ticket = {}
  const seat = line.takeSeat(TERMS, { priority, ticket, early, ...(key !== undefined ? { usage: { key, promptTokens: 0, generatedTokens: 0 } } : {}) })
  seat.then((s) => { if (s !== null) granted.push(name) }, () => {})
  return { ticket, seat }
}

const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))

t.test('classes: high, then interactive, then background, each round the keys; positions say so', async (t) => {
  const line = new KeyLine(1)
  line.tryTake()
  const granted: string[] = []
  const b1 = ask(line, granted, 'b1', 'background', 'batch')
  const i1 = ask(line, granted, 'i1', 'interactive', 'alice')
  const i2 = ask(line, granted, 'i2', 'interactive', 'alice')
  const j1 = ask(line, granted, 'j1', 'interactive', 'bob')
  const h1 = ask(line, granted, 'h1', 'high', 'carol')
  t.same([h1, i1, j1, i2, b1].map((q) => line.positionOf(q.ticket)), [1, 2, 3, 4, 5], 'positions: the classes in order, the keys\' turns within')
  for (let i = 0; i < 5; i++) { line.handOver(); await settle() }
  t.same(granted, ['h1', 'i1', 'j1', 'i2', 'b1'])
  t.notOk(line.tryTake('background'), 'the place is taken')
  line.handOver()
  t.ok(line.idle)
})

t.test('background takes a free place only when no request of a higher class waits, and is never handed on early', async (t) => {
  const line = new KeyLine(1, 1)
  const granted: string[] = []
  const held = await ask(line, granted, 'held', 'interactive').seat
  held!.begun()
  const early = ask(line, granted, 'bg-early', 'background', undefined, true)
  await settle()
  t.same(granted, ['held'], 'a background request that could go early waits in the gateway\'s line')
  t.equal(line.positionOf(early.ticket), 1)
  const person = ask(line, granted, 'person', 'interactive', undefined, true)
  await settle()
  t.same(granted, ['held', 'person'], 'the person is handed on early, past the background request')
  t.ok((await person.seat)!.early, 'into the backend\'s own queue')
  t.equal(line.positionOf(person.ticket), 1, 'first to be seated')
  t.equal(line.positionOf(early.ticket), 2)
  held!.leave()
  await settle()
  t.same(granted, ['held', 'person'], 'the freed place seats the one handed on early')
  ;(await person.seat)!.begun()
  ;(await person.seat)!.leave()
  await settle()
  t.same(granted, ['held', 'person', 'bg-early'], 'then the background request, on a place of its own')
})

t.test('a request of a higher class that finds no free place takes back the place of the background request seated last', async (t) => {
  const line = new KeyLine(2)
  const granted: string[] = []
  const first = (await ask(line, granted, 'bg1', 'background').seat)!
  const second = (await ask(line, granted, 'bg2', 'background').seat)!
  t.ok(first.preempted !== undefined && second.preempted !== undefined, 'a background seat can be taken back')
  t.notOk(first.preempted!.aborted || second.preempted!.aborted, 'not while nobody else waits')
  const person = ask(line, granted, 'person', 'interactive')
  t.ok(second.preempted!.aborted, 'the one seated last is cut')
  t.type(second.preempted!.reason, PreemptedError)
  t.match(second.preempted!.reason, { statusCode: 429, code: 'resource_unavailable' }, 'as OpenAI\'s answer to flex work without capacity')
  t.notOk(first.preempted!.aborted, 'one place for one request: the other stays')
  const bg3 = ask(line, granted, 'bg3', 'background')
  t.notOk(first.preempted!.aborted, 'a background arrival cuts nothing')
  second.leave()
  await settle()
  t.same(granted, ['bg1', 'bg2', 'person'], 'the place given back goes to the person, not to the background request waiting')
  const seat = (await person.seat)!
  t.equal(seat.preempted, undefined, 'an interactive seat is never taken back')
  const high = ask(line, granted, 'high', 'high')
  t.ok(first.preempted!.aborted, 'a high one takes back the last background place')
  first.leave()
  await settle()
  t.same(granted, ['bg1', 'bg2', 'person', 'high'])
  const another = ask(line, granted, 'another', 'interactive')
  t.equal(line.positionOf(another.ticket), 1, 'with no background seat left, it waits its turn')
  seat.leave()
  await settle()
  t.same(granted.at(-1), 'another')
  t.equal(line.positionOf(bg3.ticket), 1, 'background work waits for a place nobody else wants')
})

t.test(`the floor: while people keep the line busy, one place in ${BACKGROUND_FLOOR} handed over goes to background work, and it keeps it`, async (t) => {
  const line = new KeyLine(1)
  const granted: string[] = []
  let seat = (await ask(line, granted, 'p0', 'interactive').seat)!
  const bg = ask(line, granted, 'bg', 'background')
  for (let i = 1; i <= BACKGROUND_FLOOR; i++) {
    const next = ask(line, granted, `p${i}`, 'interactive')
    seat.leave()
    await settle()
    if (granted.at(-1) === 'bg') break
    seat = (await next.seat)!
  }
  t.equal(granted.length, BACKGROUND_FLOOR + 1, `the background request was seated at the ${BACKGROUND_FLOOR}th place handed over`)
  t.equal(granted.at(-1), 'bg')
  const kept = (await bg.seat)!
  t.equal(kept.preempted, undefined, 'a place the floor gave is not taken back')
})

t.test('a request\'s class: asked by service_tier or vLLM\'s priority, capped by its key', async (t) => {
  t.equal(priorityOfServiceTier('flex'), 'background')
  t.equal(priorityOfServiceTier('priority'), 'high')
  t.equal(priorityOfServiceTier('fast'), 'high')
  t.equal(priorityOfServiceTier('auto'), undefined)
  t.equal(priorityOfServiceTier('default'), undefined)
  t.equal(priorityOfVllm(-1), 'high')
  t.equal(priorityOfVllm(0), undefined)
  t.equal(priorityOfVllm(5), 'background')
  t.equal(askedPriority({ service_tier: 'flex', priority: -5 }), 'background', 'service_tier wins')
  t.equal(askedPriority({ priority: 3 }), 'background')
  t.equal(askedPriority({ service_tier: 'standard_only' }), undefined, 'Anthropic\'s tiers ask none')
  t.equal(askedPriority(null), undefined)

  t.equal(effectivePriority(undefined, null), 'interactive', 'keys off: interactive by default')
  t.equal(effectivePriority('high', null), 'high', 'keys off: any class may be asked for')
  t.equal(effectivePriority('high', {}), 'interactive', 'a key without a rule: no higher than interactive')
  t.equal(effectivePriority('background', {}), 'background', 'lower is always allowed')
  t.equal(effectivePriority(undefined, { default: 'background' }), 'background', 'a bulk key runs in the background')
  t.equal(effectivePriority('interactive', { default: 'background' }), 'interactive', 'and may ask for interactive')
  t.equal(effectivePriority('high', { default: 'background', max: 'background' }), 'background', 'unless capped')
  t.equal(effectivePriority('high', { max: 'high' }), 'high')
  t.equal(effectivePriority(undefined, { default: 'high' }), 'high', 'a key whose class is high may use it')
})

t.test('while people use a backend of several places, background work leaves half of them free; once they are quiet it takes them', async (t) => {
  const HOLD_MS = 200
  const line = new KeyLine(2, 0, HOLD_MS)
  const granted: string[] = []
  const person = (await ask(line, granted, 'person', 'interactive').seat)!
  const bg = ask(line, granted, 'bg', 'background')
  await settle()
  t.same(granted, ['person'], 'the other place is held for people, not given to background work')
  t.equal(line.positionOf(bg.ticket), 1)
  const next = ask(line, granted, 'next', 'interactive')
  await settle()
  t.same(granted, ['person', 'next'], 'the next person finds it free: no slot taken back, no wait')
  person.leave()
  ;(await next.seat)!.leave()
  await settle()
  t.same(granted, ['person', 'next'], 'freed places stay held while people were here a moment ago')
  // The line's timer does not keep a process alive (a server has its sockets): this test's does, meanwhile.
  const alive = setTimeout(() => {}, 10_000)
  const seat = await bg.seat
  clearTimeout(alive)
  t.same(granted, ['person', 'next', 'bg'], 'once the hold has passed, background work takes a place')
  t.ok(seat!.preempted !== undefined)
  // Four places: half of them stay with people a moment after one asked; background work takes the other two.
  const four = new KeyLine(4, 0, HOLD_MS)
  const fourGranted: string[] = []
  ;(await ask(four, fourGranted, 'person', 'interactive').seat)!.leave()
  const waiting = ['bg1', 'bg2', 'bg3'].map((name) => ask(four, fourGranted, name, 'background'))
  await settle()
  t.same(fourGranted, ['person', 'bg1', 'bg2'], 'two of four places go to background work while people were here a moment ago')
  t.equal(four.positionOf(waiting[2]!.ticket), 1, 'the third waits for the hold to pass')
  t.notOk(four.tryTake('background'), 'nor does one take a place at once')
  t.ok(four.tryTake('interactive'), 'a person finds one free')
  const alone = new KeyLine(1, 0, HOLD_MS)
  const held = (await ask(alone, [], 'p', 'interactive').seat)!
  held.leave()
  t.ok(alone.tryTake('background'), 'a backend of one place holds nothing back: background work takes it when free')
})
