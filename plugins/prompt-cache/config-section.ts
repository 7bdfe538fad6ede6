import { Type } from 'typebox'
import { Size } from '../../core/config/config-schema.js'
import { configSection } from '../../core/config/config-section.js'

declare module '../../core/config/resolved-config.js' {
  interface Config {
    /** Prompt caches saved when a runtime stops and restored when its model loads again: their folder's budget, and the smallest worth saving. */
    promptCache: { enabled: boolean, sizeBytes: number, minTokens: number }
  }
}

/** config.yaml's `prompt_cache`. */
export const section = configSection({
  plugin: 'prompt-cache',
  doc: 'docs/operations.md',
  keys: {
    prompt_cache: Type.Object({
      enabled: Type.Boolean({ default: true, description: 'save the prompt caches of a runtime about to stop, and restore them when its model loads again' }),
      size: Type.Union([Size], { default: '8GiB', description: 'the most bytes saved prompt caches hold together; the least recently used go first' }),
      min_tokens: Type.Integer({ minimum: 1, default: 1024, description: 'a slot holding fewer tokens is not worth saving' }),
    }, { additionalProperties: false, default: {} }),
  },
  resolve: ({ prompt_cache: cache }, { size }) => ({
    promptCache: { enabled: cache.enabled, sizeBytes: size('prompt_cache.size', cache.size), minTokens: cache.min_tokens },
  }),
})
