import { Type } from 'typebox'
import { Size } from '../../core/config/config-schema.js'
import { configSection } from '../../core/config/config-section.js'
import { parseSize } from '../../core/base/units.js'

declare module '../../core/config/resolved-config.js' {
  interface ConfigLimits {
    /** The most bytes uploaded blobs no model is made from may hold together, uploads under way included; null: no quota. */
    blobQuota: number | null
  }
}

/** config.yaml's `limits.blob_quota`: what uploads (POST /api/blobs) not made into a model yet may hold together. */
export const section = configSection({
  plugin: 'models-api',
  doc: 'docs/operations.md',
  keys: {},
  limits: {
    blob_quota: Type.Union([Size, Type.Literal(0), Type.Null()], { default: '200GiB', description: 'the most bytes uploaded blobs no model is made from may hold together; 0 or null: no quota' }),
  },
  resolve: ({ limits: { blob_quota: quota } }, { size }) => ({
    limits: { blobQuota: quota === null || parseSize(quota) === 0 ? null : size('limits.blob_quota', quota) },
  }),
})
