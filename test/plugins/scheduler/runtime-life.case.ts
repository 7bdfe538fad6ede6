// A runtime's life (runtime-life.ts) with a stand-in process whose gate, start, stop and exit the test decides: every
// move of the runtimes' one table (runtime-states.ts), prepared at the gate and standing by included, made and
// checked; any other move throws.
import t from 'tap'
import { RuntimeError } from '../../../core/base/errors.js'
import { IllegalTransitionError } from '../../../core/base/illegal-transition.js'
import { RUNTIME_MOVES, type ExitInfo, type RuntimeEndpoint, type RuntimeState } from '../../../runtimes/index.js'
import type { RuntimeProcess } from '../../../plugins/scheduler/ports.js'
import { RuntimeLife } from '../../../plugins/scheduler/runtime-life.js'

interface Deferred { promise: Promise<void>, resolve: () => void, reject: (err: Error) => void }
function deferred (): Deferred {
  let resolve!: () => void
  let reject!: (err: Error) => void
  const promise = new Promise<void>((res, rej) => { resolve = res; reject = rej })
  promise.catch(() => {})
  return { promise, resolve, reject }
}

/** A process with a gate: it reaches the gate, serves, stops and exits when the test says. */
class StandIn implements RuntimeProcess {
  readonly separatesCaches = true
  readonly saves = { checkpoints: true, cachedPrompts: true }
  readonly backend = 'cpu'
  readonly pid = 4242
  readonly preparesAhead = true
  preparedInMs: number | null = null
  readonly gate = deferred()
  readonly started = deferred()
  /** What a stop waits for before the process exits. */
  readonly exitAfterStop = deferred()
  private readonly exits: Array<(info: ExitInfo) => void> = []
  get endpoint (): RuntimeEndpoint { return {} as RuntimeEndpoint }
  prepare (): Promise<void> { return this.gate.promise }
  start (): Promise<void> { return this.started.promise }
  async stop (): Promise<void> {
    await this.exitAfterStop.promise
    this.exit(true)
  }

  exit (expected = false): void { for (const exit of this.exits) exit({ code: 0, signal: null, expected, logTail: [] }) }
  onExit (listener: (info: ExitInfo) => void): void { this.exits.push(listener) }
}

const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))
/** A move whose end the test looks at through the state, not through its promise. */
const quietly = (promise: Promise<void>): void => { promise.catch(() => {}) }

/** Every move of the one table (test/runtimes/process/runtime-states.case.ts pins it to its list). */
const MOVES = Object.entries(RUNTIME_MOVES).flatMap(([from, tos]) => tos.map((to): [RuntimeState, RuntimeState] => [from as RuntimeState, to]))

/** A fresh runtime brought to `state` by the moves a scheduler makes. */
async function reach (state: RuntimeState): Promise<{ life: RuntimeLife, process: StandIn }> {
  const process = new StandIn()
  const life = new RuntimeLife(process, { model: 'acme/a', ahead: true })
  switch (state) {
    case 'made': break
    case 'preparing': quietly(life.prepare()); break
    case 'prepared': process.gate.resolve(); await life.prepare(); break
    case 'standing_by': quietly(life.standBy()); break
    case 'starting': quietly(life.start()); break
    case 'ready': process.started.resolve(); await life.start(); break
    case 'stopping': quietly(life.stop()); break
    case 'stopped': process.started.resolve(); await life.start(); process.exit(); break
  }
  await settle()
  return { life, process }
}

/** The one move from `from` to `to`, as a scheduler (or the process itself) makes it. */
async function move (life: RuntimeLife, process: StandIn, from: RuntimeState, to: RuntimeState): Promise<void> {
  switch (to) {
    case 'preparing': quietly(from === 'standing_by' ? life.claim() : life.prepare()); break
    case 'prepared': process.gate.resolve(); break
    case 'standing_by': quietly(life.standBy()); break
    case 'starting': quietly(life.start()); break
    case 'ready': process.started.resolve(); break
    case 'stopping': quietly(life.stop()); break
    // From stopping, the stop's exit; from anywhere else, a crash.
    case 'stopped': if (from === 'stopping') process.exitAfterStop.resolve(); else process.exit(); break
    case 'made': throw new Error('nothing moves back to made')
  }
  await settle()
}

t.test('every move of the table, made and checked', async (t) => {
  t.equal(MOVES.length, 20, 'the table\'s 20 moves')
  for (const [from, to] of MOVES) {
    const { life, process } = await reach(from)
    t.equal(life.state, from, `reached ${from}`)
    await move(life, process, from, to)
    t.equal(life.state, to, `${from} → ${to}`)
  }
})

t.test('a move the table has not throws IllegalTransitionError', async (t) => {
  const standing = await reach('standing_by')
  await t.rejects(standing.life.start(), IllegalTransitionError, 'one standing by is claimed by a load before it starts')
  t.throws(() => { quietly(standing.life.standBy()) }, /runtime of model "acme\/a": no move from standing_by to standing_by/)
  const prepared = await reach('prepared')
  t.throws(() => { quietly(prepared.life.standBy()) }, IllegalTransitionError, 'a load\'s runtime is not given to the pool')
  const preparing = await reach('preparing')
  t.throws(() => { quietly(preparing.life.standBy()) }, /no move from preparing to standing_by/, 'a load\'s runtime never stands by')
  const ready = await reach('ready')
  t.throws(() => { quietly(ready.life.prepare()) }, /no move from ready to preparing/)
  await t.rejects(ready.life.start(), /no move from ready to starting/)
  const stopped = await reach('stopped')
  await t.rejects(stopped.life.start(), /no move from stopped to starting/, 'a runtime lives once')
  await stopped.life.stop()
  t.equal(stopped.life.state, 'stopped', 'a stop once stopped does nothing')
})

t.test('at the gate: measured once, whoever asked; a failed preparation is remembered, a stop is not a failure', async (t) => {
  const measured: number[] = []
  const process = new StandIn()
  const life = new RuntimeLife(process, { ahead: true, onPrepared: (ms) => measured.push(ms) })
  t.ok(life.preparesAhead, 'made ahead, with a gate')
  t.notOk(new RuntimeLife(process).preparesAhead, 'one not made ahead is not prepared')
  const standing = life.standBy()
  process.preparedInMs = 120
  process.gate.resolve()
  await standing
  t.equal(life.state, 'standing_by', 'at its gate, still standing by')
  await life.claim()
  await settle()
  t.equal(life.state, 'prepared', 'claimed at its gate: prepared for its load at once')
  t.same(measured, [120], 'measured once')

  const failing = await reach('preparing')
  failing.process.gate.reject(new RuntimeError('exited during start-up', [], 'runtime_start_failed'))
  failing.process.exit()
  await settle()
  t.match(failing.life.failure, { code: 'runtime_start_failed' })
  t.equal(failing.life.state, 'stopped')

  const stopped = await reach('preparing')
  stopped.process.gate.reject(new RuntimeError('stopped while it started', [], 'runtime_stopped'))
  await settle()
  t.equal(stopped.life.failure, null, 'stopped on purpose: no failure')
})

t.test('a start: a failure leaves it stopped; a stop during it wins over its readiness', async (t) => {
  const failed = await reach('starting')
  failed.process.started.reject(new RuntimeError('bad options', [], 'runtime_start_failed'))
  await settle()
  t.equal(failed.life.state, 'stopped', 'a failed start leaves nothing running')

  const process = new StandIn()
  const life = new RuntimeLife(process)
  const starting = life.start()
  const stopping = life.stop(0)
  t.equal(life.state, 'stopping')
  process.exitAfterStop.resolve()
  process.started.resolve()
  await Promise.all([starting, stopping])
  t.equal(life.state, 'stopped', 'not ready: it was stopped')
})
