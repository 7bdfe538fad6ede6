import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { writeGguf, type GgufValue } from './gguf-writer.js'
import { writeSafetensors } from './safetensors-writer.js'
import { encodeSentencePieceModel } from './sentencepiece-model.js'
import { ggufTensors, hfTensors, tinyLlama, type TinyLlama, type TinyLlamaOptions } from './tiny-llama.js'
import { CHAT_TEMPLATE } from './tiny-vocab.js'

// The tiny Llama written out: as a GGUF that llama-server loads (the test model, the benchmark model with
// larger parameters, the demo model of a fresh install), or as the Hugging Face checkpoint it would have been
// converted from (the converter's test fixture). Same options and seed: the same model.

export interface TinyModelOptions extends TinyLlamaOptions {
  /** Where to write the GGUF. */
  file: string
  /** More header keys (a license, FIM token ids), over the model's own. */
  metadata?: Record<string, GgufValue>
}

export interface TinySafetensorsOptions extends TinyLlamaOptions {
  /** The folder to write the checkpoint into; made if missing. */
  dir: string
}

/** Writes the tiny Llama as a GGUF v3: about 320 KB with the defaults (630 KB in f32). */
export async function writeTinyGguf (options: TinyModelOptions): Promise<{ file: string, bytes: number }> {
  const model = tinyLlama(options)
  const bytes = await writeGguf(options.file, { ...ggufMetadata(model), ...options.metadata }, ggufTensors(model))
  return { file: options.file, bytes }
}

/**
 * Writes the tiny Llama as a Hugging Face checkpoint: config.json, generation_config.json, model.safetensors,
 * tokenizer.model (SentencePiece, the GGUF's vocabulary) and tokenizer_config.json (with the chat template).
 */
export async function writeTinySafetensors (options: TinySafetensorsOptions): Promise<{ dir: string, files: string[] }> {
  const model = tinyLlama(options)
  const { vocab } = model
  await mkdir(options.dir, { recursive: true })
  const files: string[] = []
  const write = async (name: string, data: string | Buffer): Promise<void> => {
    const file = join(options.dir, name)
    await writeFile(file, data)
    files.push(file)
  }
  const json = (value: unknown): string => `${JSON.stringify(value, null, 2)}\n`
  await write('config.json', json(hfConfig(model)))
  await write('generation_config.json', json({ bos_token_id: vocab.bos, eos_token_id: vocab.eos, pad_token_id: vocab.unk }))
  const weights = join(options.dir, 'model.safetensors')
  await writeSafetensors(weights, hfTensors(model), { format: 'pt' })
  files.push(weights)
  await write('tokenizer.model', encodeSentencePieceModel({
    pieces: vocab.tokens.map((piece, i) => ({ piece, score: vocab.scores[i]!, type: vocab.types[i]! })),
    modelType: 'bpe', unkId: vocab.unk, bosId: vocab.bos, eosId: vocab.eos, padId: -1,
  }))
  await write('tokenizer_config.json', json({
    tokenizer_class: 'LlamaTokenizer',
    add_bos_token: true,
    add_eos_token: false,
    bos_token: vocab.tokens[vocab.bos],
    eos_token: vocab.tokens[vocab.eos],
    unk_token: vocab.tokens[vocab.unk],
    pad_token: vocab.tokens[vocab.unk],
    additional_special_tokens: [vocab.tokens[vocab.imStart], vocab.tokens[vocab.imEnd]],
    chat_template: CHAT_TEMPLATE,
    clean_up_tokenization_spaces: false,
    model_max_length: model.nCtxTrain,
    sp_model_kwargs: {},
  }))
  return { dir: options.dir, files }
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

function hfConfig (m: TinyLlama): Record<string, unknown> {
  return {
    _name_or_path: m.name,
    architectures: ['LlamaForCausalLM'],
    model_type: 'llama',
    hidden_size: m.nEmbd,
    intermediate_size: m.nFf,
    num_hidden_layers: m.nLayer,
    num_attention_heads: m.nHead,
    num_key_value_heads: m.nHeadKv,
    head_dim: m.headDim,
    vocab_size: m.vocab.tokens.length,
    max_position_embeddings: m.nCtxTrain,
    rms_norm_eps: m.rmsNormEps,
    rope_theta: m.ropeFreqBase,
    rope_scaling: null,
    hidden_act: 'silu',
    attention_bias: false,
    mlp_bias: false,
    initializer_range: 0.02,
    torch_dtype: m.dtype === 'f16' ? 'float16' : 'float32',
    bos_token_id: m.vocab.bos,
    eos_token_id: m.vocab.eos,
    pad_token_id: m.vocab.unk,
    tie_word_embeddings: false,
    use_cache: true,
  }
}
