import type { Loader } from '../leases/lease-router.js'
import { acquireRequest, type LeaseAsk } from './run-leased.js'

/**
 * Ollama's load form: a request with nothing to generate or embed loads the model (with the request's options and
 * keep_alive), or, with `keep_alive: 0`, lets it go once its requests are done. Returns the model's stored name and
 * Ollama's `done_reason` (an upstream's model: `records` finds it, and the load is a turn there sending
 * nothing). @throws ModelNotFoundError, InvalidModelNameError, BadRequestError (keep_alive)
 */
export async function loadForm (loader: Loader, records: { get(name: string): { name: string } }, ask: LeaseAsk): Promise<{ model: string, doneReason: 'load' | 'unload' }> {
  const request = acquireRequest(ask)
  const model = records.get(ask.model).name
  if (request.keepAliveMs === 0) {
    await loader.expire(model)
    return { model, doneReason: 'unload' }
  }
  await loader.load(model, request)
  return { model, doneReason: 'load' }
}
