import { Type } from 'typebox'
import { Duration } from '../../core/config/config-schema.js'
import { configSection } from '../../core/config/config-section.js'

declare module '../../core/config/resolved-config.js' {
  interface ConfigLimits {
    /** How long a busy runtime may answer nothing, or move no slot on, before it is stopped. */
    progressTimeoutMs: number
    /** How long requests for a loaded model go before a swap away from it at most; how long a model just loaded stays at least. */
    swapWaitMs: number, minResidencyMs: number
    /** A request waiting for room that this many swaps of other models went ahead of goes first. */
    maxPassedOver: number
    /** Runtimes are prepared while their load waits for room, and stand by for models given up for another. */
    prepareAhead: boolean
  }
  interface ModelConfig {
    /** When models do not fit together: a higher one is swapped in first and out last. @default 0 */
    priority?: number
    /** Never unloaded to make room for another model; reloaded once room is back. */
    pinned?: boolean
  }
}

/** The swap policy's and the watchdog's `limits`, and `models.<name>.priority`, `.pinned`. */
export const section = configSection({
  plugin: 'scheduler',
  doc: 'docs/operations.md',
  keys: {},
  limits: {
    progress_timeout: Type.Union([Duration], { default: '5m', description: 'a busy runtime that answers nothing, or moves no slot on, this long is stopped and loaded again' }),
    swap_wait: Type.Union([Duration], { default: '30s', description: 'when models do not fit together, requests for the loaded one go before a swap away from it for at most this long (the measured costs decide within it)' }),
    min_residency: Type.Union([Duration], { default: '0s', description: 'a model two clients want at once is not unloaded for another one sooner than this after its load (a floor under the measured costs; 0: the costs decide)' }),
    max_passed_over: Type.Integer({ minimum: 0, maximum: 1000, default: 2, description: 'a request waiting for its model\'s room that this many swaps of other models went ahead of goes first, whatever their priority' }),
    prepare_ahead: Type.Boolean({ default: true, description: 'when models do not fit together, start the next model\'s runtime as far as it goes without the memory (its vocabulary read) while it waits for room, and keep one parked for models given up for another (CPU builds with llamagate\'s patch set)' }),
  },
  models: {
    priority: Type.Optional(Type.Integer({ minimum: -100, maximum: 100, description: 'when models do not fit together, a higher one is swapped in first and out last (default 0)' })),
    pinned: Type.Optional(Type.Boolean({ description: 'never unloaded to make room for another model; reloaded once room is back' })),
  },
  resolveModel: ({ priority, pinned }) => ({ ...(priority !== undefined ? { priority } : {}), ...(pinned === true ? { pinned } : {}) }),
  resolve: ({ limits }, { duration, positiveDuration }) => ({
    limits: {
      progressTimeoutMs: positiveDuration('limits.progress_timeout', limits.progress_timeout),
      swapWaitMs: duration('limits.swap_wait', limits.swap_wait),
      minResidencyMs: duration('limits.min_residency', limits.min_residency),
      maxPassedOver: limits.max_passed_over,
      prepareAhead: limits.prepare_ahead,
    },
  }),
})
