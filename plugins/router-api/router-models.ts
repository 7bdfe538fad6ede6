import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { BadRequestError, ForbiddenError, NotFoundError, UnavailableError } from '../../core/base/errors.js'
import { version } from '../../core/base/version.js'
import { openAiModel } from '../models-api/tag-shape.js'
import { loadPurpose, type Purpose } from '../leases/lease.js'
import type { ModelRecord } from '../storage/model-record.js'
import { crossSiteBrowserRequest, shownProps } from './props-fields.js'
import { RouterLoads } from './router-loads.js'
import { ModelsQuery, PropsQuery, PropsReply, RouterModelBody, RouterModelsReply, SuccessReply } from './schemas.js'

// How long a loaded llama-server may take to say what it is.
const PROPS_TIMEOUT_MS = 10_000

/** What a model's instance is started for: a chat or decision model generates, the others serve their own endpoint. */
function purposeOf (record: ModelRecord): Purpose {
  return loadPurpose(record.kind)
}

/**
 * The router-mode subset of llama-server's API (tools/server/README.md "Using multiple models"), on llamagate's store
 * and scheduler: `GET /models` with each model's status, `POST /models/load` and `/models/unload`, `GET /props?model=`.
 * For the clients written for llama-server's router (pi's llama.cpp provider, llama.cpp-native tools).
 */
const routerModels: FastifyPluginAsyncTypebox = async (app) => {
  const { store, scheduler } = app
  const loads = new RouterLoads(scheduler, app.log)

  // llama-server's router answers a name it does not list with these words (server-models.cpp).
  const stored = (name: string, notFound: () => Error): ModelRecord => {
    const record = store.lookup(name)
    if (record === null) throw notFound()
    return record
  }
  const aliasesOf = (name: string): string[] => [...store.aliases].filter(([, target]) => store.lookup(target)?.name === name).map(([alias]) => alias)

  // `reload` is accepted: the store's list is always current here.
  app.get('/models', { config: { scope: 'any', modelList: { field: 'data', key: 'id' } }, schema: { querystring: ModelsQuery, response: { 200: RouterModelsReply } } }, async () => {
    const loaded = scheduler.snapshot()
    return {
      object: 'list' as const,
      data: store.list().map((r) => ({
        ...openAiModel(r, scheduler.contextWindow(r.name)),
        aliases: aliasesOf(r.name),
        tags: [],
        // llama-server shows a child's command line; llamagate's own is its business (/api/ps says what was loaded).
        status: { ...loads.status(r.name, loaded), args: [] },
        source: 'llamagate',
        // Deleting goes through Ollama's DELETE /api/delete (the manage scope), not the router's cache.
        can_remove: false,
      })),
    }
  })

  // Loading is what an empty /api/generate does, so a key that may run models may load them, and the load counts
  // against its `concurrent` limit until it is over, though answered at once.
  app.post('/models/load', { config: { scope: 'infer' }, schema: { body: RouterModelBody, response: { 200: SuccessReply } } }, async (request) => {
    const record = stored(request.body.model, () => new NotFoundError('model is not found'))
    if (loads.status(record.name).value !== 'unloaded') throw new BadRequestError('model is already running')
    loads.start(record.name, purposeOf(record), request.usage?.holdAdmission?.())
    return { success: true as const }
  })

  // As Ollama's keep_alive 0: the model goes once the requests on it (any key's) are done; none is cut.
  app.post('/models/unload', { config: { scope: 'infer' }, schema: { body: RouterModelBody, response: { 200: SuccessReply } } }, async (request) => {
    const record = stored(request.body.model, () => new BadRequestError('model is not found'))
    if (loads.status(record.name).value === 'unloaded') throw new BadRequestError('model is not running')
    await scheduler.expire(record.name)
    return { success: true as const }
  })

  // It may load the model (autoload): a key that may run models, under its quotas, as for /models/load.
  app.get('/props', { config: { scope: 'infer' }, schema: { querystring: PropsQuery, response: { 200: PropsReply } } }, async (request) => {
    const { model, autoload } = request.query
    if (model === undefined || model === '') return routerProps(app.config.limits.maxLoadedModels)
    const record = stored(model, () => new BadRequestError(`model '${model}' not found`))
    const purpose = purposeOf(record)
    if ((autoload === 'false' || autoload === '0') && loads.status(record.name).value !== 'loaded') throw new BadRequestError('model is not loaded')
    const loaded = () => scheduler.loadedRuntimes().find((r) => r.model === record.name && r.purpose === purpose)
    // A load takes a slot for a moment: a model already loaded is asked at once, not behind its requests.
    let runtime = loaded()
    if (runtime === undefined) {
      if (crossSiteBrowserRequest(request.headers['sec-fetch-site'])) throw new ForbiddenError('a page of another site may not load a model: ask for its props once it is loaded, or from the same site')
      await scheduler.load(record.name, { purpose })
      runtime = loaded()
    }
    if (runtime === undefined) throw new UnavailableError(`model "${record.name}" was unloaded before it answered`)
    return shownProps(await runtime.endpoint.props(AbortSignal.timeout(PROPS_TIMEOUT_MS)), record.name)
  })
}

/** The router's own /props (no `model`), as llama-server answers it: a router with no model of its own. */
function routerProps (maxLoaded: number): Record<string, unknown> {
  return {
    role: 'router', max_instances: maxLoaded, models_autoload: true, model_alias: 'llama-server', model_path: 'none',
    default_generation_settings: { params: {}, n_ctx: 0 }, build_info: `llamagate ${version()}`,
  }
}

export default routerModels
