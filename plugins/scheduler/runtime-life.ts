import { nextRuntimeState, type RuntimeState } from '../../runtimes/index.js'
import type { RuntimeProcess } from './ports.js'

export interface RuntimeLifeOptions {
  /** Its model, for the errors it throws. */
  model?: string
  /** Made to go to its gate before its room (a load prepared ahead, or one to stand by). @default false */
  ahead?: boolean
  /** Its preparation reached the gate `ms` after its spawn: what preparing saves a load of its model. */
  onPrepared?: (ms: number) => void
}

/**
 * The one owner of a llama-server's life on the scheduler's side, on the runtimes' one table of its states
 * (runtime-states.ts): the scheduler decides what should happen (prepare it, stand it by, start it, stop it); this
 * carries it out on the process (RuntimeProcess, which only runtimes/ knows how to reach) and says where it is.
 */
export class RuntimeLife {
  private current: RuntimeState = 'made'
  private gate: Promise<void> | null = null
  private failed: Error | null = null

  constructor (readonly process: RuntimeProcess, private readonly options: RuntimeLifeOptions = {}) {
    // However it went (a stop, a crash, a failed start), its exit ends its life.
    process.onExit(() => { if (this.current !== 'stopped') this.moveTo('stopped') })
  }

  get state (): RuntimeState { return this.current }

  /** It goes to its gate before its room: made to, and its build has a gate. */
  get preparesAhead (): boolean {
    return this.options.ahead === true && this.process.prepare !== undefined && this.process.preparesAhead === true
  }

  /** Why its preparation failed (not a stop); null while it has not. */
  get failure (): Error | null { return this.failed }

  /** A load waiting for room has it go to its gate. Resolves there. @throws RuntimeError when it exits first */
  prepare (): Promise<void> {
    this.moveTo('preparing')
    return this.toGate()
  }

  /** For a model given up: it goes to its gate and waits there for a load to claim it. @throws as prepare() */
  standBy (): Promise<void> {
    this.moveTo('standing_by')
    return this.toGate()
  }

  /** A load takes it from standing by: the gate is that load's now. @throws as prepare() */
  claim (): Promise<void> {
    this.moveTo('preparing')
    return this.toGate()
  }

  /** Its load was given room: it loads (on from its gate, or spawned now) and resolves once it serves. */
  async start (): Promise<void> {
    this.moveTo('starting')
    try {
      await this.process.start()
    } catch (err) {
      // A failed start leaves no process (the supervisor stops it first); one told to stop has said so already.
      if (this.current === 'starting') this.moveTo('stopped')
      throw err
    }
    // A stop during the start wins over its readiness.
    if (this.current === 'starting') this.moveTo('ready')
  }

  /**
   * Stops its process (SIGTERM, then SIGKILL after `graceMs`; 0: at once). Asked again while stopping, it passes the
   * new grace on (a sooner kill); once stopped, nothing is left to do.
   */
  async stop (graceMs?: number): Promise<void> {
    if (this.current === 'stopped') return
    if (this.current !== 'stopping') this.moveTo('stopping')
    await this.process.stop(graceMs)
    // One never spawned has no exit to report (`state`: its exit may have moved it meanwhile).
    if (this.state !== 'stopped') this.moveTo('stopped')
  }

  /** Moves to `to`. @throws IllegalTransitionError when its state does not lead there */
  private moveTo (to: RuntimeState): void {
    this.current = nextRuntimeState(`runtime of model "${this.options.model ?? '?'}"`, this.current, to)
  }

  /** Its one preparation, whoever asked: measured at the gate, and `prepared` once a load holds it there. */
  private toGate (): Promise<void> {
    this.gate ??= (this.process.prepare?.() ?? Promise.resolve()).then(() => {
      const ms = this.process.preparedInMs
      if (ms != null) this.options.onPrepared?.(ms)
    }, (err: Error) => {
      if ((err as { code?: string }).code !== 'runtime_stopped') this.failed = err
      throw err
    })
    const gate = this.gate
    gate.then(() => { if (this.current === 'preparing') this.moveTo('prepared') }, () => {})
    return gate
  }
}
