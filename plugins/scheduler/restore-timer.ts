import type { SchedulerPromptCache } from './ports.js'

/**
 * The prompt-cache port as the scheduler's instances use it, each restore timed: what coming back to a model costs
 * beyond its start, measured on the scheduler's side of the port (the plugin's own judging is its own). Every other
 * method goes through untouched, whatever the port grows.
 */
export function timedRestores (cache: SchedulerPromptCache, restored: (model: string, ms: number) => void): SchedulerPromptCache {
  const restoreInto: SchedulerPromptCache['restoreInto'] = async (runtime, shape) => {
    const started = performance.now()
    const judge = await cache.restoreInto(runtime, shape)
    if (judge !== null) restored(shape.model, performance.now() - started)
    return judge
  }
  return new Proxy(cache, {
    get (target, key) {
      if (key === 'restoreInto') return restoreInto
      const value: unknown = Reflect.get(target, key)
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
}
