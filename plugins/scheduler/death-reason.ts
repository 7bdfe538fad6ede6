import { RuntimeError } from '../../core/base/errors.js'
import type { SchedulerRpcWorkers } from './ports.js'

/**
 * What the requests on a runtime that died hear: how it went and its last words. Split across RPC workers,
 * llama-server aborts when one goes: they are told which one (a refused connection answers in a millisecond; the wait
 * is bounded for a host that went silent), hence a promise there.
 */
export function deathReason (model: string, exit: { code: number | null, signal: string | null, logTail: string[] },
  workers: readonly string[], rpcWorkers: SchedulerRpcWorkers | undefined): RuntimeError | Promise<RuntimeError> {
  const { code, signal, logTail } = exit
  const how = signal ? `was killed by ${signal}` : `exited with code ${code}`
  const last = logTail.filter((l) => l.trim() !== '').slice(-3).join(' | ')
  const error = new RuntimeError(`the runtime of model "${model}" ${how}${last ? `: ${last}` : ''}`, logTail, 'runtime_died')
  if (workers.length === 0 || !rpcWorkers) return error
  return rpcWorkers.explainLoss(workers).catch(() => null)
    .then((lost) => lost === null ? error : new RuntimeError(`${lost}; the runtime of model "${model}" ${how}`, logTail, 'rpc_worker_lost'))
}
