import type { SchedulableModel } from './ports.js'

// Bytes per element of each KV-cache type (block-quantized types include their scales).
const KV_BYTES: Record<string, number> = {
  f32: 4, f16: 2, bf16: 2, q8_0: 34 / 32, q4_0: 18 / 32, q4_1: 20 / 32, iq4_nl: 18 / 32, q5_0: 22 / 32, q5_1: 24 / 32,
}

/**
 * What an instance will take: the weights plus the KV cache for `ctxSize` tokens (K and V, every layer,
 * every KV head) at the cache types. Compute buffers are left out: they are small next to these and
 * depend on the backend. Without shape metadata, the file size is all we know.
 */
export function estimateInstanceBytes (model: SchedulableModel, ctxSize: number, cacheTypeK: string, cacheTypeV: string): number {
  const g = model.gguf
  if (!g?.block_count || !g.embedding_length || !g.head_count) return model.size
  const headDim = g.embedding_length / g.head_count
  const kvWidth = headDim * (g.head_count_kv ?? g.head_count)
  const perToken = g.block_count * kvWidth * ((KV_BYTES[cacheTypeK] ?? 2) + (KV_BYTES[cacheTypeV] ?? 2))
  return Math.round(model.size + perToken * ctxSize)
}
