import type { Tensor } from '../tensor-data.js'
import { baseHparams, f32, ffn, type ArchitectureWriter, type Dims, type Weights } from './types.js'

/**
 * Llama's blocks: RMS norm, attention with rotary positions, a gated feed-forward. qwen2 adds biases to the
 * q/k/v projections and Qwen's rope base; llama has neither (Llama 3's shape, with its rope base).
 */
function llamaLike (biased: boolean): ArchitectureWriter {
  return {
    hparams: (d) => ({
      ...baseHparams(d),
      [`${d.arch}.rope.freq_base`]: f32(biased ? 1_000_000 : 500_000),
      [`${d.arch}.attention.layer_norm_rms_epsilon`]: f32(1e-6),
    }),
    block: (d, b, w) => [
      w.filled(`blk.${b}.attn_norm.weight`, [d.nEmbd]),
      ...attention(d, b, w, biased),
      w.filled(`blk.${b}.ffn_norm.weight`, [d.nEmbd]),
      ...ffn(d, b, w),
    ],
  }
}

function attention (d: Dims, b: number, w: Weights, biased: boolean): Tensor[] {
  const kvWidth = d.headDim * d.nHeadKv
  // Biases are added to f32 activations: ggml's CPU add takes no f16 operand there.
  const bias = (name: string, size: number): Tensor[] => biased ? [w.random32(name, [size], 0.02)] : []
  return [
    w.matrix(`blk.${b}.attn_q.weight`, [d.nEmbd, d.nEmbd]), ...bias(`blk.${b}.attn_q.bias`, d.nEmbd),
    w.matrix(`blk.${b}.attn_k.weight`, [kvWidth, d.nEmbd]), ...bias(`blk.${b}.attn_k.bias`, kvWidth),
    w.matrix(`blk.${b}.attn_v.weight`, [kvWidth, d.nEmbd]), ...bias(`blk.${b}.attn_v.bias`, kvWidth),
    w.matrix(`blk.${b}.attn_output.weight`, [d.nEmbd, d.nEmbd]),
  ]
}

export const qwen2 = llamaLike(true)
export const llama = llamaLike(false)
