import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import fp from 'fastify-plugin'
import { ConverterStatus } from './convert-schemas.js'
import { RpcWorkersReply, RuntimesReply } from './runtimes-schemas.js'

/** What this machine can run: GET /api/runtimes, GET /api/convert/status. */
const system: FastifyPluginAsyncTypebox = async (app) => {
  // Free memory is read again on each call; the builds and the choice are those made at start, or after a GPU build.
  app.get('/api/runtimes', { config: { scope: 'admin' }, schema: { response: { 200: RuntimesReply } } }, async () => {
    const build = { status: app.runtimeBuilder.status(), warning: app.runtimeBuilder.warning }
    return app.runtimes.describe(await app.runtimes.detectDevices(), build)
  })
  app.get('/api/rpc-workers', { config: { scope: 'admin' }, schema: { response: { 200: RpcWorkersReply } } }, async () => {
    const usedBy = new Map<string, string[]>()
    for (const loaded of app.scheduler.snapshot()) {
      for (const worker of loaded.rpcWorkers) usedBy.set(worker, [...usedBy.get(worker) ?? [], loaded.model.name])
    }
    const workers = await app.rpcWorkers.describe(usedBy)
    return {
      workers: workers.map((w) => ({
        name: w.name, endpoint: w.endpoint, state: w.state, version: w.version,
        devices: w.devices.map((d) => ({ index: d.index, free_bytes: d.freeBytes, total_bytes: d.totalBytes })),
        checked_at: w.checkedAt, error: w.error, used_by: w.usedBy,
      })),
    }
  })
  app.get('/api/convert/status', { config: { scope: 'manage' }, schema: { response: { 200: ConverterStatus } } }, async () => ({ ...await app.converter.readiness({ fresh: true }), preparation: app.converterPreparation.status }))
}

export default fp(system, { name: 'system-api', dependencies: ['llama-cpp', 'convert', 'scheduler'] })
