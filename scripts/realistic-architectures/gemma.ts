import type { Tensor } from '../tensor-data.js'
import { baseHparams, f32, ffn, u32, type ArchitectureWriter, type Dims, type Weights } from './types.js'

/**
 * Gemma 3 and Gemma 4 (llama.cpp's src/models/gemma3.cpp, gemma4.cpp): layers that attend to the last
 * `slidingWindow` tokens only, and every `globalEvery`-th that attends to the whole context. A windowed layer's cache
 * drops what slid out of its window, so llama-server cannot go back to an earlier token without a checkpoint.
 * Both scale the embedding by √n_embd, normalize q and k, and normalize each sublayer's output before adding
 * it to the residual stream; Gemma 4 sizes the global layers' heads apart (twice the windowed ones here),
 * normalizes v as well, turns the global layers by frequency factors of their own, and soft-caps the logits.
 */
export const gemma3: ArchitectureWriter = {
  hparams: (d) => ({
    ...baseHparams(d),
    'gemma3.attention.key_length': u32(d.headDim),
    'gemma3.attention.value_length': u32(d.headDim),
    'gemma3.attention.sliding_window': u32(d.slidingWindow),
    'gemma3.attention.sliding_window_pattern': { type: 'i32[]', value: windowed(d) },
    'gemma3.rope.freq_base': f32(1_000_000),
    'gemma3.rope.freq_base_swa': f32(10_000),
    'gemma3.attention.layer_norm_rms_epsilon': f32(1e-6),
  }),
  block: (d, b, w) => block(d, b, w, d.headDim),
}

export const gemma4: ArchitectureWriter = {
  hparams: (d) => {
    const swaHead = d.headDim / 2
    return {
      ...baseHparams(d),
      'gemma4.attention.key_length': u32(d.headDim),
      'gemma4.attention.value_length': u32(d.headDim),
      'gemma4.attention.key_length_swa': u32(swaHead),
      'gemma4.attention.value_length_swa': u32(swaHead),
      'gemma4.rope.dimension_count': u32(d.headDim),
      'gemma4.rope.dimension_count_swa': u32(swaHead),
      'gemma4.attention.sliding_window': u32(d.slidingWindow),
      'gemma4.attention.sliding_window_pattern': { type: 'i32[]', value: windowed(d) },
      'gemma4.attention.shared_kv_layers': u32(0),
      'gemma4.embedding_length_per_layer_input': u32(0),
      'gemma4.rope.freq_base': f32(1_000_000),
      'gemma4.rope.freq_base_swa': f32(10_000),
      'gemma4.final_logit_softcapping': f32(30),
      'gemma4.attention.layer_norm_rms_epsilon': f32(1e-6),
    }
  },
  // One tensor that every global layer reads (llama.cpp loads it for the first and shares it with the others):
  // all ones, the plain rope.
  globals: (d, w) => [w.filled('rope_freqs.weight', [d.headDim / 2])],
  block: (d, b, w) => block(d, b, w, isWindowed(d, b) ? d.headDim / 2 : d.headDim),
}

function isWindowed (d: Dims, b: number): boolean {
  return (b + 1) % d.globalEvery !== 0
}

/** Per layer, 1 where it is windowed: the sliding_window_pattern key. */
function windowed (d: Dims): number[] {
  return Array.from({ length: d.nLayer }, (_, b) => isWindowed(d, b) ? 1 : 0)
}

function block (d: Dims, b: number, w: Weights, headDim: number): Tensor[] {
  const q = headDim * d.nHead
  const kv = headDim * d.nHeadKv
  return [
    w.filled(`blk.${b}.attn_norm.weight`, [d.nEmbd]),
    w.matrix(`blk.${b}.attn_q.weight`, [q, d.nEmbd]),
    w.matrix(`blk.${b}.attn_k.weight`, [kv, d.nEmbd]),
    w.matrix(`blk.${b}.attn_v.weight`, [kv, d.nEmbd]),
    w.matrix(`blk.${b}.attn_output.weight`, [d.nEmbd, q]),
    w.filled(`blk.${b}.attn_q_norm.weight`, [headDim]),
    w.filled(`blk.${b}.attn_k_norm.weight`, [headDim]),
    w.filled(`blk.${b}.post_attention_norm.weight`, [d.nEmbd]),
    w.filled(`blk.${b}.ffn_norm.weight`, [d.nEmbd]),
    ...ffn(d, b, w),
    w.filled(`blk.${b}.post_ffw_norm.weight`, [d.nEmbd]),
  ]
}
