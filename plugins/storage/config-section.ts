import { Type } from 'typebox'
import { Duration } from '../../core/config/config-schema.js'
import { configSection } from '../../core/config/config-section.js'

declare module '../../core/config/resolved-config.js' {
  interface ConfigLimits {
    /** How long an uploaded blob no model is made from is kept. */
    unusedBlobMs: number
  }
}

/** config.yaml's `limits.unused_blob_ttl`: how long the store keeps an uploaded blob no model is made from. */
export const section = configSection({
  plugin: 'storage',
  doc: 'docs/operations.md',
  keys: {},
  limits: {
    unused_blob_ttl: Type.Union([Duration], { default: '24h', description: 'an uploaded blob no model is made from is removed after this long' }),
  },
  resolve: ({ limits }, { duration }) => ({ limits: { unusedBlobMs: duration('limits.unused_blob_ttl', limits.unused_blob_ttl) } }),
})
