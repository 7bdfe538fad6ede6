import { Type } from 'typebox'
import { Duration } from '../../core/config/config-schema.js'
import { configSection } from '../../core/config/config-section.js'

declare module '../../core/config/resolved-config.js' {
  interface ModelConfig {
    /** Loaded at start and kept (keepAliveMs, else forever). */
    preload?: boolean
    /** The preloaded model's keep-alive; unset: forever. */
    keepAliveMs?: number
  }
}

/** config.yaml's `models.<name>.preload` and its `keep_alive`: the models loaded at start, which /readyz waits for. */
export const section = configSection({
  plugin: 'lifecycle',
  doc: 'docs/operations.md',
  keys: {},
  models: {
    preload: Type.Optional(Type.Boolean({ description: 'loaded at start and kept loaded; /readyz waits for it' })),
    keep_alive: Type.Optional(Duration),
  },
  resolveModel: ({ preload, keep_alive: keepAlive }, name, { duration }) => ({
    ...(preload === true ? { preload } : {}),
    ...(keepAlive !== undefined ? { keepAliveMs: duration(`models.${name}.keep_alive`, keepAlive) } : {}),
  }),
  resolve: () => ({}),
})
