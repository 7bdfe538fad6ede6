import { Type, type Static } from 'typebox'

// The KV-cache element types llama.cpp accepts for --cache-type-k / --cache-type-v.
const KV_CACHE_TYPES = ['f32', 'f16', 'bf16', 'q8_0', 'q4_0', 'q4_1', 'iq4_nl', 'q5_0', 'q5_1'] as const

// Output types of the SafeTensors → GGUF conversion: the converter's own outtypes, then llama-quantize's.
export const CONVERTER_DTYPES = ['f32', 'f16', 'bf16', 'q8_0'] as const
export const QUANTIZE_DTYPES = [
  'q4_0', 'q4_1', 'q5_0', 'q5_1', 'q2_k', 'q2_k_s', 'q3_k', 'q3_k_s', 'q3_k_m', 'q3_k_l',
  'q4_k', 'q4_k_s', 'q4_k_m', 'q5_k', 'q5_k_s', 'q5_k_m', 'q6_k', 'iq1_s', 'iq1_m', 'iq2_xxs', 'iq2_xs',
  'iq2_s', 'iq2_m', 'iq3_xxs', 'iq3_xs', 'iq3_s', 'iq3_m', 'iq4_nl', 'iq4_xs', 'tq1_0', 'tq2_0', 'mxfp4_moe',
] as const

const KvCacheType = Type.Union(KV_CACHE_TYPES.map((t) => Type.Literal(t)))
const Dtype = Type.Union([...CONVERTER_DTYPES, ...QUANTIZE_DTYPES].map((t) => Type.Literal(t)))

/**
 * The options object of rest-interface §2.5, with the ranges of the contract. Unknown keys are allowed
 * here (the contract says they are ignored and logged), so the schema stays open.
 */
export const OptionsSchema = Type.Object({
  temperature: Type.Optional(Type.Number({ minimum: 0 })),
  top_p: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 1 })),
  top_k: Type.Optional(Type.Integer({ minimum: 0 })),
  max_tokens: Type.Optional(Type.Union([Type.Integer({ minimum: 1 }), Type.Literal(-1)])),
  seed: Type.Optional(Type.Integer()),
  num_ctx: Type.Optional(Type.Integer({ minimum: 16 })),
  num_parallel: Type.Optional(Type.Integer({ minimum: 1, maximum: 64 })),
  // No model has 10,000 layers; llama-server failed at start on 99999999999 (a 502 instead of a 400).
  n_gpu_layers: Type.Optional(Type.Integer({ minimum: -1, maximum: 10_000 })),
  // Ollama's: CPU threads for generation (llama-server's --threads); unset, llama-server picks.
  num_thread: Type.Optional(Type.Integer({ minimum: 1, maximum: 1024 })),
  cache_type_k: Type.Optional(KvCacheType),
  cache_type_v: Type.Optional(KvCacheType),
  dtype: Type.Optional(Dtype),
  // Ollama's sampling options, which llama-server takes under the same names (num_predict is max_tokens).
  num_predict: Type.Optional(Type.Union([Type.Integer({ minimum: 1 }), Type.Literal(-1), Type.Literal(-2)])),
  min_p: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
  typical_p: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
  repeat_penalty: Type.Optional(Type.Number({ minimum: 0 })),
  repeat_last_n: Type.Optional(Type.Integer({ minimum: -1 })),
  presence_penalty: Type.Optional(Type.Number()),
  frequency_penalty: Type.Optional(Type.Number()),
  stop: Type.Optional(Type.Union([Type.String(), Type.Array(Type.String())])),
  num_keep: Type.Optional(Type.Integer({ minimum: -1 })),
  // llama-server's: keep generating past end-of-sequence (benchmarks that need a fixed token count).
  ignore_eos: Type.Optional(Type.Boolean()),
})
export type Options = Static<typeof OptionsSchema>

/** Every option key the gateway understands; others are ignored and logged (contract: Errors). */
export const KNOWN_OPTIONS: readonly string[] = Object.keys(OptionsSchema.properties)

/** Options that shape the runtime process: a change needs a new instance (contract: Options). */
export const LOAD_TIME_OPTIONS = ['num_ctx', 'num_parallel', 'n_gpu_layers', 'num_thread', 'cache_type_k', 'cache_type_v', 'dtype'] as const
export type LoadOptions = Pick<Options, (typeof LOAD_TIME_OPTIONS)[number]>
