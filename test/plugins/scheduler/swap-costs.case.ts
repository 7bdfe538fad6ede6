// The swap decision by measured costs, with the stand-ins ports.ts exists for: no llama-server, processes that start
// and stop at once, leases the test takes and gives back. The limits are config.yaml's defaults, so that what is
// tested is what a server does unless told otherwise.
import t from 'tap'
import { ModelNotFoundError } from '../../../core/base/errors.js'
import { resolveConfig } from '../../../core/platform/config.js'
import type { ExitInfo, RuntimeEndpoint, RuntimeSpawnOptions } from '../../../runtimes/index.js'
import type { Instance } from '../../../plugins/scheduler/instance.js'
import type { Lease } from '../../../plugins/leases/lease.js'
import type { RuntimeProcess, SchedulableModel, SchedulerSettings, SchedulerStore } from '../../../plugins/scheduler/ports.js'
import { Scheduler } from '../../../plugins/scheduler/scheduler.js'
import { SwapCosts } from '../../../plugins/scheduler/swap-costs.js'
import type { SwapReason } from '../../../plugins/scheduler/swap-costs.js'
import { SwapPolicy } from '../../../plugins/scheduler/swap-policy.js'
import { WaitEstimate } from '../../../plugins/scheduler/wait-estimate.js'

const { limits } = resolveConfig([])
const DEFAULTS = { swapWaitMs: limits.swapWaitMs, minResidencyMs: limits.minResidencyMs, maxPassedOver: limits.maxPassedOver }

const model = (name: string, size = 1000): SchedulableModel => ({ name, format: 'gguf', size })
const MODELS: Record<string, SchedulableModel> = Object.fromEntries(['acme/a', 'acme/b', 'acme/low', 'acme/high1', 'acme/high2'].map((n) => [n, model(n)]))

const store: SchedulerStore = {
  get: (name) => { const m = MODELS[name]; if (!m) throw new ModelNotFoundError(name); return m },
  lookup: (name) => MODELS[name] ?? null,
  ggufPath: (m) => `/models/${m.name}.gguf`,
  projectorPath: () => null,
}

/** A runtime that starts and stops at once. */
class QuickProcess implements RuntimeProcess {
  private readonly exits: Array<(info: ExitInfo) => void> = []
  readonly separatesCaches = true
  readonly saves = { checkpoints: true, cachedPrompts: true }
  readonly backend = 'cpu'
  readonly pid = 4242
  constructor (readonly options: RuntimeSpawnOptions) {}
  get endpoint (): RuntimeEndpoint { return {} as RuntimeEndpoint }
  async start (): Promise<void> {}
  async stop (): Promise<void> { for (const exit of this.exits) exit({ code: 0, signal: 'SIGTERM', expected: true, logTail: [] }) }
  onExit (listener: (info: ExitInfo) => void): void { this.exits.push(listener) }
}

/** A scheduler on stand-ins; `created` names each runtime made, in order, and when. */
function scheduler (t: { teardown(fn: () => unknown): void }, settings: Partial<SchedulerSettings> = {}): { scheduler: Scheduler, created: Array<{ model: string, at: number }>, evicted: Array<{ model: string, for: string, reason: SwapReason }> } {
  const created: Array<{ model: string, at: number }> = []
  const quiet = { info: () => {}, warn: () => {}, error: () => {} }
  const s = new Scheduler({
    store,
    runtimes: { freeMemory: async () => 1e12, create: (options) => { created.push({ model: options.alias, at: performance.now() }); return new QuickProcess(options) } },
    settings: { keepAliveMs: 60_000, maxLoadedModels: 1, queueLength: 16, loadTimeoutMs: 20_000, defaultOptions: { num_ctx: 512, num_parallel: 1 }, modelOptions: new Map(), ...DEFAULTS, ...settings },
    log: quiet,
  })
  const evicted: Array<{ model: string, for: string, reason: SwapReason }> = []
  s.events.on('evicted', (m, forModel, reason) => evicted.push({ model: m, for: forModel, reason }))
  t.teardown(() => s.unloadAll())
  return { scheduler: s, created, evicted }
}

const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))
async function until (what: string, ok: () => boolean): Promise<void> {
  for (let i = 0; i < 5000 && !ok(); i++) await settle()
  if (!ok()) throw new Error(`never: ${what}`)
}
const waitingFor = (s: Scheduler, name: string): number => s.requestCounts().get(name)?.queued ?? 0
// A swap that is not held happens within the release's own turns: milliseconds. A hold lasts the old fixed one
// (min_residency: 5s, before the costs decided) or until swap_wait (30 s) or the load timeout (20 s): half the
// shortest, so that a busy machine's pauses (seconds at worst) never reach it and a hold always does.
const HOLD_BOUND_MS = 2500

t.test('an idle model is given up at once for a waiting request, even one two clients wanted at once', async (t) => {
  const { scheduler: s, created, evicted } = scheduler(t)
  const a = await s.acquire('acme/a')
  // acme/b's request waits while acme/a serves: two clients want the room at once (the old fixed hold's case).
  const b = s.acquire('acme/b')
  await until('acme/b to wait for room', () => waitingFor(s, 'acme/b') === 1)
  const released = performance.now()
  a.release()
  ;(await b).release()
  const bCreated = created.find((c) => c.model === 'acme/b')!
  t.ok(bCreated.at - released < HOLD_BOUND_MS, `acme/b's runtime was made ${Math.round(bCreated.at - released)} ms after acme/a went idle, not after a hold`)
  t.same(evicted, [{ model: 'acme/a', for: 'acme/b', reason: 'idle-given-up' }], 'the swap says why: acme/a was idle and nothing for it was expected')
  t.same(s.snapshot().map((m) => ({ name: m.model.name, swap: m.swap })), [{ name: 'acme/b', swap: { replaced: 'acme/a', reason: 'idle-given-up' } }], '/api/ps says what acme/b replaced and why')
})

t.test('a burst is served before a swap: every queued request of the loaded model gets its slot before the other model loads', async (t) => {
  const { scheduler: s, created } = scheduler(t)
  const first = await s.acquire('acme/a')
  const order: string[] = []
  const queued = [1, 2, 3].map((n) => s.acquire('acme/a').then((lease) => { order.push(`a${n}`); return lease }))
  await until('acme/a\'s three to queue', () => waitingFor(s, 'acme/a') === 3)
  const b = s.acquire('acme/b').then((lease) => { order.push('b'); return lease })
  await until('acme/b to wait for room', () => waitingFor(s, 'acme/b') === 1)
  // Each of acme/a's requests gives its slot back as soon as it has it: the burst goes through one slot in turn.
  let last = performance.now()
  first.release()
  for (const lease of queued) { last = performance.now(); (await lease).release() }
  ;(await b).release()
  t.same(order, ['a1', 'a2', 'a3', 'b'], 'acme/a\'s queued requests, then acme/b')
  t.same(created.map((c) => c.model), ['acme/a', 'acme/b'], 'one swap for the whole burst')
  const bCreated = created[1]!.at
  t.ok(bCreated - last < HOLD_BOUND_MS, `acme/b loaded ${Math.round(bCreated - last)} ms after the burst's last request, not after a fixed hold`)
})

t.test('no request is passed over by more than limits.max_passed_over swaps, whatever the priorities', async (t) => {
  const { scheduler: s, created, evicted } = scheduler(t, {
    maxPassedOver: 1,
    modelOptions: new Map([['acme/high1', { priority: 10 }], ['acme/high2', { priority: 10 }]]),
  })
  const a = await s.acquire('acme/a')
  const low = s.acquire('acme/low')
  await until('acme/low to wait for room', () => waitingFor(s, 'acme/low') === 1)
  const high1 = s.acquire('acme/high1')
  await until('acme/high1 to wait for room', () => waitingFor(s, 'acme/high1') === 1)
  a.release()
  // acme/high1 goes ahead of acme/low (priority): acme/low has been passed over once, the bound.
  const h1 = await high1
  const high2 = s.acquire('acme/high2')
  await until('acme/high2 to wait for room', () => waitingFor(s, 'acme/high2') === 1)
  h1.release()
  ;(await low).release()
  ;(await high2).release()
  t.same(created.map((c) => c.model), ['acme/a', 'acme/high1', 'acme/low', 'acme/high2'], 'acme/low loaded before acme/high2, which asked after the bound was reached')
  t.same(evicted.map((e) => `${e.model} for ${e.for}: ${e.reason}`), [
    'acme/a for acme/high1: priority',
    'acme/high1 for acme/low: bound-reached',
    'acme/low for acme/high2: priority',
  ])
})

/** An instance as the decision reads it. */
function resident (name: string, busy: { active?: number, queued?: number } = {}, size = 1000): Instance {
  const active = busy.active ?? 0
  const queued = busy.queued ?? 0
  return { model: model(name, size), purpose: 'generate', active, queued, awaitingLoad: 0, idle: active + queued === 0, loadedAt: 1, contended: true, options: { num_parallel: 1 } } as unknown as Instance
}
function swapIn (name: string, waiting: number, arrived: number): { instance: Instance, arrived: number, passedOver: number } {
  return { instance: { model: model(name), purpose: 'generate', awaitingLoad: waiting, options: { num_parallel: 1 } } as unknown as Instance, arrived, passedOver: 0 }
}
function costs (estimate: WaitEstimate): SwapCosts {
  return new SwapCosts({ estimate, swaps: new SwapPolicy({ modelOptions: new Map(), minResidencyMs: DEFAULTS.minResidencyMs }), settings: DEFAULTS })
}

/**
 * What the scheduler would have measured of `model`: its users back `gapMs` after it went idle (three times), a load
 * of `loadMs`, a request of `requestMs` if given; idle again since 10 s.
 */
function measured (model: string, gapMs: number, loadMs: number, requestMs?: number): WaitEstimate {
  const estimate = new WaitEstimate()
  for (let i = 0; i < 3; i++) { estimate.wentIdle(model, 0); estimate.arrived(model, gapMs) }
  estimate.loaded(`${model}\0generate`, loadMs)
  if (requestMs !== undefined) estimate.served(`${model}\0generate`, requestMs)
  estimate.wentIdle(model, 10_000)
  return estimate
}

t.test('the costs: an idle model is held only while a request for it is expected and coming back would cost more', async (t) => {
  // acme/big's users come back 200 ms after it goes idle, and its load takes 8 s.
  const decide = costs(measured('acme/big', 200, 8000, 300))
  const held = decide.decide(resident('acme/big'), swapIn('acme/b', 1, 10_000), 10_050)
  t.match(held, { go: false }, 'held: its user is expected back in 150 ms, and going away and back costs a reload of 8 s')
  t.ok(!held.go && held.until <= 10_400, 'held only until the expected request is late (twice its usual gap)')
  t.match(decide.decide(resident('acme/big'), swapIn('acme/b', 1, 10_000), 10_400), { go: true, reason: 'idle-given-up' }, 'given up once its user is late: nothing is expected any more')
  t.match(decide.decide(resident('acme/big'), swapIn('acme/b', 40, 10_000), 10_050), { go: true, reason: 'queue-cost' }, 'given up when 40 waiting requests would pay more for the hold than coming back costs')
  t.match(decide.decide(resident('acme/big'), swapIn('acme/b', 1, 10_000), 10_300), { go: false }, 'held a little past the usual gap')
  t.match(decide.decide(resident('acme/big'), swapIn('acme/b', 1, 1_000), 10_050), { go: false }, 'what the waiting request waited already is paid either way: still held')
  // A small model's reload is cheaper than holding the waiting request through the gap.
  t.match(costs(measured('acme/small', 2000, 300)).decide(resident('acme/small'), swapIn('acme/b', 1, 10_000), 10_050), { go: true, reason: 'queue-cost' }, 'a cheap reload is not held for')
  t.match(costs(new WaitEstimate()).decide(resident('acme/a'), swapIn('acme/b', 1, 0), 1), { go: true, reason: 'idle-given-up' }, 'with no gap measured, nothing is expected: given up')
})

t.test('the costs: a hold is paid by every request waiting for room, whichever model it waits for', async (t) => {
  // acme/big's user comes back about a second after it goes idle; its load takes 5 s.
  const decide = costs(measured('acme/big', 1000, 5000, 300))
  t.match(decide.decide(resident('acme/big'), swapIn('acme/b', 1, 10_000), 10_050), { go: false }, 'one request waiting: holding through the gap costs it less than a reload of 5 s')
  t.match(decide.decide(resident('acme/big'), swapIn('acme/b', 1, 10_000), 10_050, 2), { go: true, reason: 'queue-cost' }, 'two more waiting for another model: the hold would cost the three of them more than coming back')
  // Counted to the hold's end (the request late), not to its expected arrival: a user who does not come back costs the waiting the whole hold.
  t.match(costs(measured('acme/big', 3000, 5000)).decide(resident('acme/big'), swapIn('acme/b', 1, 10_000), 10_050), { go: true, reason: 'queue-cost' }, 'expected in 3 s, late after 6: a hold of up to 6 s costs more than a reload of 5')
})

t.test('the costs: a busy model takes new requests until the waiting requests\' cost passes a swap and the way back', async (t) => {
  const estimate = new WaitEstimate()
  estimate.loaded('acme/a\0generate', 1000)
  estimate.loaded('acme/b\0generate', 1000)
  estimate.unloaded('acme/a\0generate', 100)
  estimate.unloaded('acme/b\0generate', 100)
  const decide = costs(estimate)
  // A swap: 100 + 1000, and back: 100 + 1000, so 2200 request-ms.
  const early = decide.decide(resident('acme/a', { active: 1 }), swapIn('acme/b', 2, 0), 1000)
  t.match(early, { go: false, waitCostMs: 2000, swapCostMs: 2200 }, 'two requests waiting a second cost less than the swap')
  t.ok(!early.go && early.until === 1100, 'looked at again when the cost is reached')
  t.match(decide.decide(resident('acme/a', { active: 1 }), swapIn('acme/b', 2, 0), 1100), { go: true, reason: 'queue-cost' })
  t.match(decide.decide(resident('acme/a', { active: 1 }), swapIn('acme/b', 1, 0), DEFAULTS.swapWaitMs), { go: true }, 'never past limits.swap_wait')
  t.match(decide.decide(resident('acme/a', { active: 1 }), { ...swapIn('acme/b', 1, 0), passedOver: DEFAULTS.maxPassedOver }, 1), { go: true, reason: 'bound-reached' })
})

t.test('the costs: a swap to a load prepared while it waited costs what is left of its load once it has room', async (t) => {
  const estimate = new WaitEstimate()
  estimate.loaded('acme/a\0generate', 1000)
  estimate.loaded('acme/b\0generate', 1000)
  estimate.loaded('acme/b\0generate', 100, true)
  estimate.unloaded('acme/a\0generate', 100)
  estimate.unloaded('acme/b\0generate', 100)
  t.equal(estimate.swapInMs('acme/b\0generate', 1000, true), 100, 'a prepared load: its own median')
  t.equal(estimate.swapInMs('acme/b\0generate', 1000), 1000, 'a whole load: the whole loads\' median')
  t.equal(estimate.swapInMs('acme/a\0generate', 1000, true), 1000, 'no prepared load measured yet: the whole one')
  t.same(estimate.figures('acme/b\0generate', 'acme/b'), { loadMs: 1000, preparedLoadMs: 100, prepareMs: null, restoreMs: null, unloadMs: 100, requestMs: null, promptTokensPerS: null, generatedTokensPerS: null, returnGapMs: null })
  const incoming = { ...swapIn('acme/b', 2, 0), instance: { ...swapIn('acme/b', 2, 0).instance, preparesAhead: true } as unknown as Instance }
  // A swap: 100 + 100 (prepared), and back: 100 + 1000 (acme/a's whole load), so 1300 request-ms, not 2200.
  t.match(costs(estimate).decide(resident('acme/a', { active: 1 }), incoming, 650), { go: true, reason: 'queue-cost', waitCostMs: 1300, swapCostMs: 1300 }, 'two requests waiting 650 ms already pay for the cheaper swap')
  t.match(costs(estimate).decide(resident('acme/a', { active: 1 }), swapIn('acme/b', 2, 0), 650), { go: false, swapCostMs: 2200 }, 'the same load not prepared: not yet')
})
