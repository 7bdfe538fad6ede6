import fp from 'fastify-plugin'
import { promptCacheDir } from './prompt-cache-folder.js'
import { PromptCaches } from './prompt-caches.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Prompt caches that outlive a runtime (the scheduler saves and restores through it); null when prompt_cache is off. */
    promptCache: PromptCaches | null
  }
}

export default fp(async (app) => {
  const { promptCache } = app.config
  // Beside the models (a dot folder the store skips), so that replicas sharing the folder share the caches too.
  const caches = promptCache.enabled
    ? new PromptCaches({ dir: promptCacheDir(app.config.modelsDir), sizeBytes: promptCache.sizeBytes, minTokens: promptCache.minTokens, log: app.log })
    : null
  app.decorate('promptCache', caches)
  // A request's first token: its slot read its prompt, so a restore there can be judged before the request ends.
  if (caches !== null) app.leases.events.on('firstToken', (model) => caches.judgeRestores(model))
}, { name: 'prompt-cache', dependencies: ['leases'] })
