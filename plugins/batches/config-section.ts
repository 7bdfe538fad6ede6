import { Type } from 'typebox'
import { Size } from '../../core/config/config-schema.js'
import { configSection } from '../../core/config/config-section.js'

declare module '../../core/config/resolved-config.js' {
  interface ConfigLimits {
    /** Batch uploads: the most bytes one file may have, all of a key's files together, and the requests one batch may hold. */
    batchFileBytes: number, batchBytesPerKey: number, batchRequests: number
    /** How many requests of a batch run at once (as background work: they take free slots only). */
    batchConcurrency: number
  }
}

/** The Batch APIs' `limits` (plugins/batches). */
export const section = configSection({
  plugin: 'batches',
  doc: 'docs/operations.md',
  keys: {},
  limits: {
    batch_file_size: Type.Union([Size], { default: '200MiB', description: 'the largest file one upload to /v1/files may be' }),
    batch_files_per_key: Type.Union([Size], { default: '1GiB', description: 'all of one key\'s uploaded and batch result files together' }),
    batch_requests: Type.Integer({ minimum: 1, maximum: 1_000_000, default: 50_000, description: 'the most requests (lines) one batch may hold' }),
    batch_concurrency: Type.Integer({ minimum: 1, maximum: 256, default: 4, description: 'how many requests of a batch run at once, as background work' }),
  },
  resolve: ({ limits }, { size }) => ({
    limits: {
      batchFileBytes: size('limits.batch_file_size', limits.batch_file_size),
      batchBytesPerKey: size('limits.batch_files_per_key', limits.batch_files_per_key),
      batchRequests: limits.batch_requests,
      batchConcurrency: limits.batch_concurrency,
    },
  }),
})
