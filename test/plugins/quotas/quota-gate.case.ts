// The door's admission of a request, held past its answer for work it started that outlives it (a router load):
// the key's `concurrent` count holds until the answer is over and every hold is released, once each.
import { EventEmitter } from 'node:events'
import type { FastifyReply, FastifyRequest } from 'fastify'
import t from 'tap'
import { TooManyRequestsError } from '../../../core/base/errors.js'
import type { RequestUsage } from '../../../core/base/request-usage.js'
import { KeyQuotas } from '../../../plugins/quotas/key-quotas.js'
import { admitRequest } from '../../../plugins/quotas/quota-gate.js'

const quotas = (): KeyQuotas => new KeyQuotas({ tokensToday: () => 0 })

/** A request of key `one` (one request at a time) as the door sees it, and its reply's socket. */
function request (gate: KeyQuotas): { usage: Partial<RequestUsage>, socket: EventEmitter & { destroyed: boolean } } {
  const usage: Partial<RequestUsage> = {}
  const socket = Object.assign(new EventEmitter(), { destroyed: false })
  const req = { grant: { name: 'one', limits: { concurrent: 1 } }, routeOptions: { config: { scope: 'infer' } }, usage, body: {} } as unknown as FastifyRequest
  admitRequest(gate, req, { raw: socket } as unknown as FastifyReply)
  return { usage, socket }
}

const refused = (gate: KeyQuotas): boolean => {
  try { request(gate) } catch (err) { if (err instanceof TooManyRequestsError) return true; throw err }
  return false
}

t.test('a hold keeps the key counted past its answer until released', async (t) => {
  const gate = quotas()
  const first = request(gate)
  const release = first.usage.holdAdmission!()
  first.socket.emit('close')
  t.ok(refused(gate), 'the answer is over, the load it started is not: the key is still at its limit')
  release()
  release()
  const next = request(gate)
  t.pass('released: the next request is let in')
  t.ok(refused(gate), 'and a second release freed nothing more: that one counts')
  next.socket.emit('close')
  t.notOk(refused(gate))
})

t.test('a hold released before the answer ends does not end it', async (t) => {
  const gate = quotas()
  const first = request(gate)
  first.usage.holdAdmission!()()
  t.ok(refused(gate), 'the answer still runs')
  first.socket.emit('close')
  t.notOk(refused(gate))
})

t.test('a hold taken after the end holds nothing', async (t) => {
  const gate = quotas()
  const first = request(gate)
  first.socket.emit('close')
  const release = first.usage.holdAdmission!()
  t.notOk(refused(gate), 'not counted again')
  release()
})
