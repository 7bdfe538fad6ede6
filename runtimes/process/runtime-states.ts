import { IllegalTransitionError } from '../../core/base/illegal-transition.js'

/**
 * Where one llama-server is in its life, from its making to its exit. made: nothing spawned yet; preparing: on its way
 * to its gate (a build with `--load-gate`: the model's vocabulary read, none of its memory taken) for a load waiting
 * for room; prepared: at its gate, its load still waiting; standing_by: on its way to or at its gate for a model given
 * up for another, no load yet; starting: it loads (on from its gate, or spawned now); ready: it serves; stopping:
 * asked to stop; stopped: its process is gone (a stop, a crash, a failed start or preparation).
 *
 * One table for both of its owners: LlamaServer makes the process's own moves on it (it never stands by: whose its
 * gate is, a load's or nobody's yet, is the scheduler's to know), and the scheduler's RuntimeLife carries out its
 * decisions on it, standing by included. Only the moves in RUNTIME_MOVES happen; any other is a bug.
 */
export type RuntimeState = 'made' | 'preparing' | 'prepared' | 'standing_by' | 'starting' | 'ready' | 'stopping' | 'stopped'

export const RUNTIME_MOVES: Readonly<Record<RuntimeState, readonly RuntimeState[]>> = {
  // Nothing runs yet: a stop has no exit to wait for, but goes through stopping like any other.
  made: ['preparing', 'standing_by', 'starting', 'stopping'],
  // Room may come before the gate does: the start loads on once there. A process may die on its way (stopped).
  preparing: ['prepared', 'starting', 'stopping', 'stopped'],
  prepared: ['starting', 'stopping', 'stopped'],
  // A load claims it: its gate, reached or not, is that load's.
  standing_by: ['preparing', 'stopping', 'stopped'],
  // A failed start and a crash go straight to stopped; a stop asked for goes through stopping.
  starting: ['ready', 'stopping', 'stopped'],
  ready: ['stopping', 'stopped'],
  stopping: ['stopped'],
  stopped: [],
}

/** `to`, when the table leads there from `from`. @throws IllegalTransitionError for any other move (`subject` names whose) */
export function nextRuntimeState (subject: string, from: RuntimeState, to: RuntimeState): RuntimeState {
  if (!RUNTIME_MOVES[from].includes(to)) throw new IllegalTransitionError(subject, from, to)
  return to
}
