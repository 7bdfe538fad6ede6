import type { Tensor } from '../tensor-data.js'
import { baseHparams, f32, ffn, u32, type ArchitectureWriter, type Dims, type Weights } from './types.js'

/**
 * LFM2 (llama.cpp's src/models/lfm2.cpp): gated short-convolution layers, and every `globalEvery`-th one of
 * attention. A convolution layer's state is its last inputs, which llama-server cannot cut back to an earlier
 * token, only restore from a checkpoint. llama.cpp tells the kinds apart by the per-layer key/value head count
 * (0: a convolution), and keeps the final norm under the name `token_embd_norm`.
 */
export const lfm2: ArchitectureWriter = {
  hparams: (d) => ({
    ...baseHparams(d),
    'lfm2.attention.head_count_kv': { type: 'i32[]', value: Array.from({ length: d.nLayer }, (_, b) => isAttention(d, b) ? d.nHeadKv : 0) },
    'lfm2.shortconv.l_cache': u32(CONV_CACHE),
    'lfm2.rope.freq_base': f32(1_000_000),
    'lfm2.attention.layer_norm_rms_epsilon': f32(1e-5),
  }),
  block: (d, b, w) => [
    w.filled(`blk.${b}.attn_norm.weight`, [d.nEmbd]),
    ...(isAttention(d, b) ? attention(d, b, w) : shortConv(d, b, w)),
    w.filled(`blk.${b}.ffn_norm.weight`, [d.nEmbd]),
    ...ffn(d, b, w),
  ],
  outputNorm: 'token_embd_norm.weight',
}

// LFM2's: the convolution's kernel spans 3 tokens.
const CONV_CACHE = 3

function isAttention (d: Dims, b: number): boolean {
  return (b + 1) % d.globalEvery === 0
}

function attention (d: Dims, b: number, w: Weights): Tensor[] {
  const kv = d.headDim * d.nHeadKv
  return [
    w.filled(`blk.${b}.attn_q_norm.weight`, [d.headDim]),
    w.filled(`blk.${b}.attn_k_norm.weight`, [d.headDim]),
    w.matrix(`blk.${b}.attn_q.weight`, [d.nEmbd, d.nEmbd]),
    w.matrix(`blk.${b}.attn_k.weight`, [kv, d.nEmbd]),
    w.matrix(`blk.${b}.attn_v.weight`, [kv, d.nEmbd]),
    w.matrix(`blk.${b}.attn_output.weight`, [d.nEmbd, d.nEmbd]),
  ]
}

function shortConv (d: Dims, b: number, w: Weights): Tensor[] {
  return [
    // ggml's convolution takes an f32 kernel.
    w.random32(`blk.${b}.shortconv.conv.weight`, [d.nEmbd, CONV_CACHE], 0.5),
    // Three gates' worth: b and c around the convolution, x through it.
    w.matrix(`blk.${b}.shortconv.in_proj.weight`, [3 * d.nEmbd, d.nEmbd]),
    w.matrix(`blk.${b}.shortconv.out_proj.weight`, [d.nEmbd, d.nEmbd]),
  ]
}
