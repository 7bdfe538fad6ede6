import { writeGguf, type GgufValue } from './gguf-writer.js'
import { ggufTensors, tinyLlama, type TinyLlama, type TinyLlamaOptions } from './tiny-llama.js'
import { CHAT_TEMPLATE } from './tiny-vocab.js'

// The tiny Llama as a GGUF that llama-server loads: llamagate/testing's models, and through scripts/fixtures the
// suite's test model, the benchmark model with larger parameters and the demo model of a fresh install.

export interface TinyModelOptions extends TinyLlamaOptions {
  /** Where to write the GGUF. */
  file: string
  /** More header keys (a license, FIM token ids), over the model's own. */
  metadata?: Record<string, GgufValue>
}

/** Writes the tiny Llama as a GGUF v3: about 320 KB with the defaults (630 KB in f32). */
export async function writeTinyGguf (options: TinyModelOptions): Promise<{ file: string, bytes: number }> {
  const model = tinyLlama(options)
  const bytes = await writeGguf(options.file, { ...ggufMetadata(model), ...options.metadata }, ggufTensors(model))
  return { file: options.file, bytes }
}

function ggufMetadata (m: TinyLlama): Record<string, GgufValue> {
  const { vocab } = m
  return {
    'general.architecture': { type: 'string', value: 'llama' },
    'general.name': { type: 'string', value: m.name },
    'general.file_type': { type: 'u32', value: m.dtype === 'f16' ? 1 : 0 }, // LLAMA_FTYPE_MOSTLY_F16 or ALL_F32
    'general.alignment': { type: 'u32', value: 32 },
    'llama.context_length': { type: 'u32', value: m.nCtxTrain },
    'llama.embedding_length': { type: 'u32', value: m.nEmbd },
    'llama.block_count': { type: 'u32', value: m.nLayer },
    'llama.feed_forward_length': { type: 'u32', value: m.nFf },
    'llama.attention.head_count': { type: 'u32', value: m.nHead },
    'llama.attention.head_count_kv': { type: 'u32', value: m.nHeadKv },
    'llama.rope.dimension_count': { type: 'u32', value: m.headDim },
    'llama.attention.layer_norm_rms_epsilon': { type: 'f32', value: m.rmsNormEps },
    'llama.rope.freq_base': { type: 'f32', value: m.ropeFreqBase },
    'llama.vocab_size': { type: 'u32', value: vocab.tokens.length },
    'tokenizer.ggml.model': { type: 'string', value: 'llama' },
    'tokenizer.ggml.tokens': { type: 'string[]', value: vocab.tokens },
    'tokenizer.ggml.scores': { type: 'f32[]', value: vocab.scores },
    'tokenizer.ggml.token_type': { type: 'i32[]', value: vocab.types },
    'tokenizer.ggml.bos_token_id': { type: 'u32', value: vocab.bos },
    'tokenizer.ggml.eos_token_id': { type: 'u32', value: vocab.eos },
    'tokenizer.ggml.unknown_token_id': { type: 'u32', value: vocab.unk },
    'tokenizer.ggml.padding_token_id': { type: 'u32', value: vocab.unk },
    'tokenizer.ggml.add_bos_token': { type: 'bool', value: true },
    'tokenizer.ggml.add_eos_token': { type: 'bool', value: false },
    'tokenizer.chat_template': { type: 'string', value: CHAT_TEMPLATE },
  }
}
