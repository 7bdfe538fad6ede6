import { Type } from 'typebox'
import { Size } from '../../core/config/config-schema.js'
import { configSection } from '../../core/config/config-section.js'

declare module '../../core/config/resolved-config.js' {
  interface Config {
    /** Whether `image_url` parts may name http(s) URLs, which the gateway then fetches. */
    vision: { allowRemoteImages: boolean, allowPrivateImageHosts: boolean, maxRemoteImages: number, maxRemoteImageBytes: number }
  }
  interface ConfigLimits {
    /** The largest output schema or grammar a request may carry, in bytes; and the most enum values and consts in one. */
    schemaBytes: number, schemaAlternatives: number
  }
}

/** config.yaml's `vision`: images a request names by URL; and `limits.schema_*`: what one output constraint may cost. */
export const section = configSection({
  plugin: 'inference',
  doc: 'docs/operations.md',
  keys: {
    vision: Type.Object({
      allow_remote_images: Type.Boolean({ default: false }),
      allow_private_image_hosts: Type.Boolean({ default: false, description: 'image URLs may be on loopback or private addresses' }),
      max_remote_images: Type.Integer({ minimum: 1, default: 8, description: 'the most image URLs fetched for one request' }),
      max_remote_image_bytes: Type.Union([Size], { default: '20MiB', description: 'the most bytes fetched for one request\'s images together' }),
    }, { additionalProperties: false, default: {} }),
  },
  limits: {
    schema_size: Type.Union([Size], { default: '64KiB', description: 'the largest output schema, grammar or tool schema one request may carry' }),
    schema_alternatives: Type.Integer({ minimum: 1, default: 1024, description: 'the most enum values and consts one such schema may list' }),
  },
  resolve: ({ vision, limits }, { size }) => ({
    vision: {
      allowRemoteImages: vision.allow_remote_images,
      allowPrivateImageHosts: vision.allow_private_image_hosts,
      maxRemoteImages: vision.max_remote_images,
      maxRemoteImageBytes: size('vision.max_remote_image_bytes', vision.max_remote_image_bytes),
    },
    limits: { schemaBytes: size('limits.schema_size', limits.schema_size), schemaAlternatives: limits.schema_alternatives },
  }),
})
