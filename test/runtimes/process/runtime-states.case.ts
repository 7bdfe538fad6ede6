// The one table of a llama-server's life (runtime-states.ts), read as a whole: every move it has, prepared at the gate
// and standing by included, and every pair of states it has not, which throws. How its two owners walk it is tested
// where they are: LlamaServer in llama-server.case.ts and load-gate.case.ts, RuntimeLife in runtime-life.case.ts.
import t from 'tap'
import { IllegalTransitionError } from '../../../core/base/illegal-transition.js'
import { RUNTIME_MOVES, nextRuntimeState, type RuntimeState } from '../../../runtimes/process/runtime-states.js'

const STATES: RuntimeState[] = ['made', 'preparing', 'prepared', 'standing_by', 'starting', 'ready', 'stopping', 'stopped']

const MOVES: Array<[RuntimeState, RuntimeState]> = [
  ['made', 'preparing'], ['made', 'standing_by'], ['made', 'starting'], ['made', 'stopping'],
  ['preparing', 'prepared'], ['preparing', 'starting'], ['preparing', 'stopping'], ['preparing', 'stopped'],
  ['prepared', 'starting'], ['prepared', 'stopping'], ['prepared', 'stopped'],
  ['standing_by', 'preparing'], ['standing_by', 'stopping'], ['standing_by', 'stopped'],
  ['starting', 'ready'], ['starting', 'stopping'], ['starting', 'stopped'],
  ['ready', 'stopping'], ['ready', 'stopped'],
  ['stopping', 'stopped'],
]

t.test('the table holds every state and exactly these moves', async (t) => {
  t.same(Object.keys(RUNTIME_MOVES), STATES, 'every state of the life, in its order')
  const listed = Object.entries(RUNTIME_MOVES).flatMap(([from, tos]) => tos.map((to) => [from, to]))
  t.same(listed, MOVES, 'every move listed, no other')
})

t.test('a move the table has is made; any other throws IllegalTransitionError, naming whose', async (t) => {
  for (const from of STATES) {
    for (const to of STATES) {
      if (MOVES.some(([f, x]) => f === from && x === to)) {
        t.equal(nextRuntimeState('llama-server', from, to), to, `${from} → ${to}`)
      } else {
        t.throws(() => nextRuntimeState('llama-server of model "acme/a"', from, to), new IllegalTransitionError('llama-server of model "acme/a"', from, to), `no ${from} → ${to}`)
      }
    }
  }
  t.throws(() => nextRuntimeState('llama-server', 'made', 'ready'), /llama-server: no move from made to ready/, 'nothing serves before it starts')
  t.throws(() => nextRuntimeState('llama-server', 'stopping', 'ready'), /no move from stopping to ready/, 'a stop wins over readiness')
  t.throws(() => nextRuntimeState('llama-server', 'stopped', 'starting'), /no move from stopped to starting/, 'a process lives once')
  t.throws(() => nextRuntimeState('llama-server', 'prepared', 'standing_by'), /no move from prepared to standing_by/, 'a load\'s gate is never given to the pool')
})
