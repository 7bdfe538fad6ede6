import type { GgufValue } from '../gguf-writer.js'
import type { Tensor } from '../tensor-data.js'
import { baseHparams, f32, ffn, u32, type ArchitectureWriter, type Dims, type Weights } from './types.js'

/**
 * Qwen3.5 (llama.cpp's src/models/qwen35.cpp): Gated DeltaNet layers, and every `globalEvery`-th one of full
 * attention (Qwen3.5's interval is 4). A DeltaNet layer keeps a recurrent state (a short convolution's last inputs and a matrix per value
 * head) in place of a KV cache: llama-server cannot cut it back to an earlier token, only restore a checkpoint
 * of it. The full-attention layers gate their output by a second half of the query projection, normalize q and
 * k, and turn a quarter of each head by multi-section rope.
 */
export const qwen35: ArchitectureWriter = {
  hparams: (d) => {
    const nRot = d.headDim / 4
    return {
      ...baseHparams(d),
      'qwen35.attention.key_length': u32(d.headDim),
      'qwen35.attention.value_length': u32(d.headDim),
      'qwen35.rope.dimension_count': u32(nRot),
      'qwen35.rope.dimension_sections': { type: 'i32[]', value: sections(nRot / 2) },
      'qwen35.rope.freq_base': f32(10_000_000),
      'qwen35.attention.layer_norm_rms_epsilon': f32(1e-6),
      'qwen35.ssm.conv_kernel': u32(CONV_KERNEL),
      'qwen35.ssm.state_size': u32(d.linear.headDim),
      'qwen35.ssm.group_count': u32(d.linear.keyHeads),
      'qwen35.ssm.time_step_rank': u32(d.linear.valueHeads),
      'qwen35.ssm.inner_size': u32(d.linear.valueHeads * d.linear.headDim),
      'qwen35.full_attention_interval': u32(d.globalEvery),
    } satisfies Record<string, GgufValue>
  },
  block: (d, b, w) => [
    w.filled(`blk.${b}.attn_norm.weight`, [d.nEmbd]),
    ...((b + 1) % d.globalEvery === 0 ? gatedAttention(d, b, w) : deltaNet(d, b, w)),
    // The norm before the feed-forward, under Qwen's name for it.
    w.filled(`blk.${b}.post_attention_norm.weight`, [d.nEmbd]),
    ...ffn(d, b, w),
  ],
}

// Qwen3.5's: the convolution sees the last 4 inputs.
const CONV_KERNEL = 4

/** Qwen3.5's rope sections over the rotated pairs (11, 11 and 10 of 32), scaled to `pairs`. */
function sections (pairs: number): number[] {
  const first = Math.round(pairs * 11 / 32)
  return [first, first, pairs - 2 * first, 0]
}

function gatedAttention (d: Dims, b: number, w: Weights): Tensor[] {
  const q = d.headDim * d.nHead
  const kv = d.headDim * d.nHeadKv
  return [
    // The query and, interleaved head by head, the gate of the attention's output.
    w.matrix(`blk.${b}.attn_q.weight`, [2 * q, d.nEmbd]),
    w.matrix(`blk.${b}.attn_k.weight`, [kv, d.nEmbd]),
    w.matrix(`blk.${b}.attn_v.weight`, [kv, d.nEmbd]),
    w.matrix(`blk.${b}.attn_output.weight`, [d.nEmbd, q]),
    w.filled(`blk.${b}.attn_q_norm.weight`, [d.headDim]),
    w.filled(`blk.${b}.attn_k_norm.weight`, [d.headDim]),
  ]
}

function deltaNet (d: Dims, b: number, w: Weights): Tensor[] {
  const { keyHeads, valueHeads, headDim } = d.linear
  const value = valueHeads * headDim
  const channels = 2 * keyHeads * headDim + value
  return [
    w.matrix(`blk.${b}.attn_qkv.weight`, [channels, d.nEmbd]),
    w.matrix(`blk.${b}.attn_gate.weight`, [value, d.nEmbd]),
    // ggml's convolution and the gate's arithmetic take f32 operands.
    w.random32(`blk.${b}.ssm_conv1d.weight`, [channels, CONV_KERNEL], 0.5),
    w.random32(`blk.${b}.ssm_dt.bias`, [valueHeads], 0.5),
    // -exp(A_log): negative, so that the state decays token by token; a positive one would grow it without
    // bound over a long prompt.
    w.filled(`blk.${b}.ssm_a`, [valueHeads], -1),
    w.matrix(`blk.${b}.ssm_beta.weight`, [valueHeads, d.nEmbd]),
    w.matrix(`blk.${b}.ssm_alpha.weight`, [valueHeads, d.nEmbd]),
    w.filled(`blk.${b}.ssm_norm.weight`, [headDim]),
    w.matrix(`blk.${b}.ssm_out.weight`, [d.nEmbd, value]),
  ]
}
