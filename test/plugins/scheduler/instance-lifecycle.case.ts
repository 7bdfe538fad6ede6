// The instance lifecycle with the stand-ins ports.ts exists for: no llama-server, a process whose start,
// stop and exit the test decides. The transitions and the one end path, and the races between a load and a stop.
import t from 'tap'
import { ModelNotFoundError, RuntimeError } from '../../../core/base/errors.js'
import type { ResolvedOptions } from '../../../core/config/request-options.js'
import type { ExitInfo, RuntimeEndpoint, RuntimeSpawnOptions } from '../../../runtimes/index.js'
import { IllegalTransitionError } from '../../../core/base/illegal-transition.js'
import { Instance } from '../../../plugins/scheduler/instance.js'
import type { RuntimeProcess, SchedulableModel, SchedulerStore } from '../../../plugins/scheduler/ports.js'
import { RuntimeLife } from '../../../plugins/scheduler/runtime-life.js'
import { Scheduler } from '../../../plugins/scheduler/scheduler.js'

const MODELS: Record<string, SchedulableModel> = {
  'acme/a': { name: 'acme/a', format: 'gguf', size: 1000 },
  'acme/b': { name: 'acme/b', format: 'gguf', size: 1000 },
}

const store: SchedulerStore = {
  get: (name) => { const m = MODELS[name]; if (!m) throw new ModelNotFoundError(name); return m },
  lookup: (name) => MODELS[name] ?? null,
  ggufPath: (model) => `/models/${model.name}.gguf`,
  projectorPath: () => null,
}

/** A process the test drives: its start resolves or fails when told, it exits when stopped or when told to crash. */
class FakeProcess implements RuntimeProcess {
  readonly started: Promise<void>
  private go!: () => void
  private fail!: (err: Error) => void
  private readonly exits: Array<(info: ExitInfo) => void> = []
  stops = 0
  alive = false
  readonly separatesCaches = true
  readonly saves = { checkpoints: true, cachedPrompts: true }
  readonly backend = 'cpu'
  readonly pid = 4242

  constructor (readonly options: RuntimeSpawnOptions) {
    this.started = new Promise<void>((resolve, reject) => { this.go = resolve; this.fail = reject })
    this.started.catch(() => {})
  }

  get endpoint (): RuntimeEndpoint { return {} as RuntimeEndpoint }
  start (): Promise<void> { this.alive = true; return this.started }
  ready (): void { this.go() }
  failStart (message: string): void { this.alive = false; this.fail(new RuntimeError(message, [], 'runtime_start_failed')) }
  async stop (): Promise<void> {
    this.stops++
    if (!this.alive) return
    this.alive = false
    this.fail(new RuntimeError('stopped while it started', [], 'runtime_stopped'))
    for (const exit of this.exits) exit({ code: 0, signal: 'SIGTERM', expected: true, logTail: [] })
  }

  crash (): void {
    this.alive = false
    for (const exit of this.exits) exit({ code: 139, signal: null, expected: false, logTail: ['segfault'] })
  }

  onExit (listener: (info: ExitInfo) => void): void { this.exits.push(listener) }
}

function scheduler (settings: Partial<ConstructorParameters<typeof Scheduler>[0]['settings']> = {}): { scheduler: Scheduler, processes: FakeProcess[] } {
  const processes: FakeProcess[] = []
  const quiet = { info: () => {}, warn: () => {}, error: () => {} }
  const s = new Scheduler({
    store,
    runtimes: { freeMemory: async () => 1e12, create: (options) => { const p = new FakeProcess(options); processes.push(p); return p } },
    settings: { keepAliveMs: 60_000, maxLoadedModels: 1, queueLength: 4, loadTimeoutMs: 2000, defaultOptions: { num_ctx: 512, num_parallel: 1 }, modelOptions: new Map(), ...settings },
    log: quiet,
  })
  return { scheduler: s, processes }
}

const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))
async function until (what: string, ok: () => boolean): Promise<void> {
  for (let i = 0; i < 1000 && !ok(); i++) await settle()
  if (!ok()) throw new Error(`never: ${what}`)
}

t.test('the phases: only the table\'s moves, any other a thrown IllegalTransitionError; /api/ps\'s states follow them', async (t) => {
  const instance = new Instance(MODELS['acme/a']!, { num_parallel: 1 } as ResolvedOptions['load'], 1, Infinity)
  t.equal(instance.phase, 'waiting_for_room')
  t.equal(instance.state, 'loading')
  t.throws(() => instance.markLoaded(), IllegalTransitionError, 'no runtime yet: it cannot serve')
  instance.attach(new RuntimeLife(new FakeProcess({} as RuntimeSpawnOptions)))
  t.equal(instance.phase, 'starting')
  instance.markLoaded()
  t.same([instance.phase, instance.state, instance.accepting], ['ready', 'loaded', true])
  instance.drain()
  t.same([instance.phase, instance.state, instance.accepting, instance.unloadsWhenIdle], ['draining', 'loaded', false, true])
  t.throws(() => instance.drain(), /no move from draining to draining/)
  t.equal(instance.beginEnd(), true)
  t.same([instance.phase, instance.state, instance.ending], ['stopping', 'unloading', true])
  t.equal(instance.beginEnd(), false, 'the end begins once')
  instance.markGone()
  t.equal(instance.phase, 'gone')
  t.throws(() => instance.markGone(), IllegalTransitionError)
  t.throws(() => instance.attach(new RuntimeLife(new FakeProcess({} as RuntimeSpawnOptions))), /no move from gone to starting/)

  const drainedWhileLoading = new Instance(MODELS['acme/a']!, { num_parallel: 1 } as ResolvedOptions['load'], 1, Infinity)
  drainedWhileLoading.attach(new RuntimeLife(new FakeProcess({} as RuntimeSpawnOptions)))
  drainedWhileLoading.drain()
  t.equal(drainedWhileLoading.state, 'loading', 'drained before it served: still loading')
  drainedWhileLoading.markLoaded()
  t.same([drainedWhileLoading.phase, drainedWhileLoading.state], ['draining', 'loaded'], 'it serves those it has, draining')
})

t.test('a stop while the runtime starts: the start ends as stopped, the process is stopped once, the instance is gone', async (t) => {
  const { scheduler: s, processes } = scheduler()
  const asked = s.acquire('acme/a')
  await until('the runtime to be made', () => processes.length === 1)
  const stopping = s.stop('acme/a')
  await t.rejects(asked, /stopped/)
  await stopping
  t.equal(processes[0]!.stops, 1, 'stopped once')
  t.same(s.snapshot(), [], 'nothing listed')
  // The next request loads afresh.
  const again = s.acquire('acme/a')
  await until('a second runtime', () => processes.length === 2)
  processes[1]!.ready()
  const lease = await again
  t.equal(lease.model.name, 'acme/a')
  lease.release()
})

t.test('a stop while a load waits for room: no runtime is ever made for it', async (t) => {
  const { scheduler: s, processes } = scheduler({ maxLoadedModels: 1 })
  const a = s.acquire('acme/a')
  await until('a\'s runtime', () => processes.length === 1)
  processes[0]!.ready()
  const holding = await a // a busy model b must wait for
  const b = s.acquire('acme/b')
  await settle()
  await s.stop('acme/b')
  await t.rejects(b, /stopped/)
  holding.release()
  await new Promise((resolve) => setTimeout(resolve, 50))
  t.equal(processes.length, 1, 'b never started')
  t.same(s.snapshot().map((m) => m.model.name), ['acme/a'])
})

t.test('a crash: requests in line look for a fresh instance, the crashed one is gone through the one end path', async (t) => {
  const { scheduler: s, processes } = scheduler()
  const first = s.acquire('acme/a')
  await until('the runtime', () => processes.length === 1)
  processes[0]!.ready()
  const lease = await first
  const waiting = s.acquire('acme/a') // in line for the only slot
  await settle()
  processes[0]!.crash()
  t.match(lease.signal.reason, { code: 'runtime_died' }, 'the request in flight hears why')
  await until('a fresh runtime for the one in line', () => processes.length === 2)
  t.equal(processes[0]!.stops, 0, 'a dead process is not stopped again')
  processes[1]!.ready()
  const second = await waiting
  t.equal(second.model.name, 'acme/a')
  second.release()
  lease.release()
  t.equal(s.snapshot().length, 1, 'only the fresh one listed')
})

t.test('a failed start: every waiter hears it; the next request waits out the back-off; the end path ran once', async (t) => {
  const { scheduler: s, processes } = scheduler()
  const one = s.acquire('acme/a')
  const two = s.acquire('acme/a')
  await until('the runtime', () => processes.length === 1)
  processes[0]!.failStart('bad options')
  await t.rejects(one, /bad options/)
  await t.rejects(two, /bad options/)
  await t.rejects(s.acquire('acme/a'), { code: 'runtime_backoff' }, 'within its back-off, no new start')
  t.equal(processes.length, 1)
  t.same(s.snapshot(), [])
})
