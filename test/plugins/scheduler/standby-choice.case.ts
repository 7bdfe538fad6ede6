// Which models get a runtime standing by once given up for another (standby-runtimes.ts), with the stand-ins ports.ts
// exists for: runtimes whose start and preparation take as long as the test says, on a clock only they move, so that
// the measured costs the choice reads are the test's, whatever the machine's load.
import { setTimeout as delay } from 'node:timers/promises'
import t from 'tap'
import { ModelNotFoundError } from '../../../core/base/errors.js'
import type { ExitInfo, RuntimeEndpoint, RuntimeSpawnOptions } from '../../../runtimes/index.js'
import type { RuntimeProcess, SchedulableModel, SchedulerStore } from '../../../plugins/scheduler/ports.js'
import { Scheduler } from '../../../plugins/scheduler/scheduler.js'

const MODELS: Record<string, SchedulableModel> = Object.fromEntries(['acme/slow', 'acme/quick', 'acme/other'].map((name) => [name, { name, format: 'gguf', size: 1000 }]))
const store: SchedulerStore = {
  get: (name) => { const m = MODELS[name]; if (!m) throw new ModelNotFoundError(name); return m },
  lookup: (name) => MODELS[name] ?? null,
  ggufPath: (m) => `/models/${m.name}.gguf`,
  projectorPath: () => null,
}

/** The scheduler's clock: it moves only as the stand-ins' starts say, not with the machine's load. */
class StandInClock {
  ms = 0
  readonly now = (): number => this.ms
}

/** A runtime with a gate: its whole start takes `startMs` (a vocabulary read of that long), a preparation as long. */
class GatedProcess implements RuntimeProcess {
  private readonly exits: Array<(info: ExitInfo) => void> = []
  private preparing: Promise<void> | null = null
  readonly separatesCaches = true
  readonly saves = { checkpoints: true, cachedPrompts: true }
  readonly backend = 'cpu'
  readonly preparesAhead = true
  readonly pid = 4242
  preparedInMs: number | null = null
  stopped = false
  /** What its stop waits for before it exits (a test holds an unload there). */
  exitAfter: Promise<void> = Promise.resolve()
  constructor (readonly options: RuntimeSpawnOptions, private readonly startMs: number, private readonly clock: StandInClock) {}
  get endpoint (): RuntimeEndpoint { return {} as RuntimeEndpoint }
  prepare (): Promise<void> {
    this.preparing ??= delay(this.startMs).then(() => { this.preparedInMs = this.startMs })
    return this.preparing
  }

  async start (): Promise<void> {
    if (this.preparing !== null) { await this.preparing; return }
    await delay(this.startMs)
    this.clock.ms += this.startMs
  }
  async stop (): Promise<void> {
    this.stopped = true
    await this.exitAfter
    for (const exit of this.exits) exit({ code: 0, signal: 'SIGTERM', expected: true, logTail: [] })
  }

  onExit (listener: (info: ExitInfo) => void): void { this.exits.push(listener) }
}

function scheduler (t: { teardown(fn: () => unknown): void }): { scheduler: Scheduler, made: GatedProcess[] } {
  const made: GatedProcess[] = []
  const clock = new StandInClock()
  const quiet = { info: () => {}, warn: () => {}, error: () => {} }
  const s = new Scheduler({
    store,
    runtimes: {
      freeMemory: async () => 1e12,
      create: (options) => { const p = new GatedProcess(options, options.alias === 'acme/slow' ? 120 : 5, clock); made.push(p); return p },
      preparesAhead: () => true,
    },
    settings: { keepAliveMs: 60_000, maxLoadedModels: 1, queueLength: 16, loadTimeoutMs: 20_000, defaultOptions: { num_ctx: 512, num_parallel: 1 }, modelOptions: new Map(), minResidencyMs: 0, swapWaitMs: 30_000, maxPassedOver: 2 },
    clock: clock.now,
    log: quiet,
  })
  t.teardown(() => s.unloadAll())
  return { scheduler: s, made }
}

async function use (s: Scheduler, name: string, keepAliveMs?: number): Promise<void> {
  (await s.acquire(name, keepAliveMs !== undefined ? { keepAliveMs } : {})).release()
}

/** Whether each load from now on was prepared ahead, in order. */
function preparedLoads (s: Scheduler): boolean[] {
  const loads: boolean[] = []
  s.events.on('loaded', (_model, _purpose, _seconds, prepared) => loads.push(prepared))
  return loads
}

async function until (what: string, ok: () => boolean): Promise<void> {
  for (let i = 0; i < 400 && !ok(); i++) await delay(5)
  if (!ok()) throw new Error(`never: ${what}`)
}

t.test('a model whose start takes long stands by once given up; its next load starts from the gate', async (t) => {
  const { scheduler: s, made } = scheduler(t)
  const loads = preparedLoads(s)
  await use(s, 'acme/slow')
  await use(s, 'acme/other')
  await until('acme/slow standing by', () => s.prepared().some((p) => p.model === 'acme/slow' && p.why === 'standing_by'))
  const standing = made.at(-1)!
  t.equal(standing.options.alias, 'acme/slow', 'a runtime made for it after acme/other loaded')
  await use(s, 'acme/slow')
  t.same(loads, [false, false, true], 'acme/slow came back from its gate')
  t.notOk(standing.stopped, 'the runtime that stood by is the one that serves')
  t.equal(made.filter((p) => p.options.alias === 'acme/slow').length, 2, 'no third one made')
  t.equal(s.costs('acme/slow').prepareMs, 120, 'its preparation measured: what a load from the gate no longer waits for')
})

t.test('a model whose start is quick gets none: a swap to it would gain less than the process costs', async (t) => {
  const { scheduler: s, made } = scheduler(t)
  const loads = preparedLoads(s)
  await use(s, 'acme/quick')
  await use(s, 'acme/other')
  t.same(s.prepared(), [], 'nothing stands by for acme/quick once acme/other has loaded')
  await use(s, 'acme/quick')
  t.same(loads, [false, false, false], 'acme/quick came back from nothing')
  t.same(made.map((p) => p.options.alias), ['acme/quick', 'acme/other', 'acme/quick'], 'one runtime per load')
})

t.test('one stands by for its model\'s own keep-alive, and goes with a keep_alive 0 for the model', async (t) => {
  const { scheduler: s, made } = scheduler(t)
  await use(s, 'acme/slow', 2000)
  await use(s, 'acme/other')
  await until('acme/slow standing by', () => s.prepared().some((p) => p.model === 'acme/slow'))
  const [standing] = s.prepared()
  t.ok(standing!.expiresAt !== null && standing!.expiresAt - Date.now() <= 2000, 'until the keep-alive its last request asked for (2 s), not the default (60 s)')
  await s.expire('acme/slow')
  t.same(s.prepared(), [], 'keep_alive 0 for the model ends it')
  t.ok(made.filter((p) => p.options.alias === 'acme/slow').at(-1)!.stopped, 'its runtime stopped')
})

t.test('a model stopped (or deleted) while its unload for another runs gets no runtime standing by after it', async (t) => {
  const { scheduler: s, made } = scheduler(t)
  await use(s, 'acme/slow')
  const slow = made.at(-1)!
  let exit!: () => void
  slow.exitAfter = new Promise((resolve) => { exit = resolve })
  // acme/other's load gives acme/slow up: its unload waits in its runtime's stop until the test lets it exit.
  const other = use(s, 'acme/other')
  for (let i = 0; i < 400 && !slow.stopped; i++) await delay(5)
  t.ok(slow.stopped, 'acme/slow is being unloaded for acme/other')
  const stopping = s.stop('acme/slow')
  exit()
  await Promise.all([other, stopping])
  // A standby is made a few turns after the unload ends (it waits for loads to settle): the bound of this negative look.
  await delay(50)
  t.same(s.prepared(), [], 'nothing stands by for the stopped model')
  t.equal(made.filter((p) => p.options.alias === 'acme/slow').length, 1, 'no runtime was made for it')
})
