import { Type } from 'typebox'
import { ModelOrName } from '../../core/base/model-name.js'

/** A body naming one model by `model`, or by `name` as Ollama's older clients do. */
export const ModelOrNameBody = ModelOrName({})
/** Ollama's copy: `destination` becomes a second name of `source`. */
export const CopyBody = Type.Object({ source: Type.String({ minLength: 1 }), destination: Type.String({ minLength: 1 }) })
export const CopyReply = Type.Object({ status: Type.Literal('copied') })

export const ImportBody = Type.Object({
  model: Type.String({ minLength: 1 }),
  /** An absolute path on the server's machine (a relative one is taken from the server's working folder). */
  path: Type.String({ minLength: 1 }),
  /** A vision projector (`mmproj-*.gguf`) to load beside it, on the server's machine too. */
  projector: Type.Optional(Type.String({ minLength: 1 })),
})

const Details = Type.Object({
  parent_model: Type.String(),
  format: Type.String(),
  family: Type.Union([Type.String(), Type.Null()]),
  families: Type.Union([Type.Array(Type.String()), Type.Null()]),
  parameter_size: Type.Union([Type.String(), Type.Null()]),
  quantization_level: Type.Union([Type.String(), Type.Null()]),
})

/** rest-interface §2.2, plus Ollama's `digest` and `details`. */
export const ModelRecordSchema = Type.Object({
  name: Type.String(),
  model: Type.String(),
  size: Type.Integer(),
  format: Type.String(),
  modified_at: Type.String(),
  digest: Type.String(),
  details: Details,
})

/** A model of /api/tags: a remote one (config.yaml's upstreams) says where it runs, as Ollama marks its remote models. */
export const TagSchema = Type.Object({
  ...ModelRecordSchema.properties,
  capabilities: Type.Optional(Type.Array(Type.String())),
  remote_model: Type.Optional(Type.String()),
  remote_host: Type.Optional(Type.String()),
})
export const TagsReply = Type.Object({ models: Type.Array(TagSchema) })

/** rest-interface §4.5: `modelfile` and `details`, plus what the GGUF says about itself (Ollama's `model_info`). */
// `verbose` keeps long arrays in model_info.
export const ShowBody = ModelOrName({ verbose: Type.Optional(Type.Boolean()) })

export const ShowReply = Type.Object({
  modelfile: Type.String(),
  /** The GGUF's general.license, as Ollama's Modelfile LICENSE; absent when it names none. */
  license: Type.Optional(Type.String()),
  // The spec's record (§2.2) and Ollama's flat details, in one object.
  details: Type.Intersect([Type.Omit(ModelRecordSchema, ['details']), Details]),
  model_info: Type.Record(Type.String(), Type.Unknown()),
  template: Type.String(),
  parameters: Type.String(),
  system: Type.Optional(Type.String()),
  capabilities: Type.Array(Type.String()),
  /** The vision projector's GGUF metadata, as Ollama shows it; only for models that have one. */
  projector_info: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  modified_at: Type.String(),
  /** An upstream's model (config.yaml's upstreams): its name there and where it runs, as Ollama shows its remote models. */
  remote_model: Type.Optional(Type.String()),
  remote_host: Type.Optional(Type.String()),
})

export const DeleteReply = Type.Object({ status: Type.Literal('deleted') })

const MaybeInteger = Type.Union([Type.Integer(), Type.Null()])
/** OpenAI's model object; a stored model adds its context window (tag-shape.ts openAiModel), an upstream's has none. */
export const OpenAiModel = Type.Object({
  id: Type.String(), object: Type.Literal('model'), created: Type.Integer(), owned_by: Type.String(),
  context_window: Type.Optional(Type.Integer()),
  max_context_length: Type.Optional(Type.Integer()),
  meta: Type.Optional(Type.Object({ n_ctx: Type.Integer(), n_ctx_train: MaybeInteger, n_params: MaybeInteger, size: Type.Integer() })),
  capabilities: Type.Optional(Type.Array(Type.String())),
  architecture: Type.Optional(Type.Object({ input_modalities: Type.Array(Type.String()), output_modalities: Type.Array(Type.String()) })),
})
/** The TypeSafe SDK's model card (its client requires a `models` list), with llama-server's and Ollama's capabilities. */
const ModelCard = Type.Object({ id: Type.String(), name: Type.String(), model: Type.String(), description: Type.String(), release_date: Type.String(), capabilities: Type.Array(Type.String()) })
export const OpenAiModelList = Type.Object({ object: Type.Literal('list'), data: Type.Array(OpenAiModel), models: Type.Optional(Type.Array(ModelCard)) })

/** Anthropic's model object (GET /v1/models with an `anthropic-version` header, as its SDKs send). */
const Support = Type.Object({ supported: Type.Boolean() })
const MaybeSupport = Type.Union([Support, Type.Null()])
// ModelCapabilities, as Anthropic's SDK types it (src/resources/models.ts).
const AnthropicCapabilities = Type.Object({
  batch: Support, citations: Support, code_execution: Support, pdf_input: Support, image_input: Support, structured_outputs: Support,
  context_management: Type.Object({ supported: Type.Boolean(), clear_thinking_20251015: MaybeSupport, clear_tool_uses_20250919: MaybeSupport, compact_20260112: MaybeSupport }),
  effort: Type.Object({ supported: Type.Boolean(), low: Support, medium: Support, high: Support, max: Support, xhigh: MaybeSupport }),
  thinking: Type.Object({ supported: Type.Boolean(), types: Type.Object({ enabled: Support, adaptive: Support }) }),
})
const Limit = Type.Union([Type.Integer(), Type.Null()])
export const AnthropicModel = Type.Object({
  type: Type.Literal('model'), id: Type.String(), display_name: Type.String(), created_at: Type.String(),
  max_input_tokens: Limit, max_tokens: Limit, capabilities: Type.Union([AnthropicCapabilities, Type.Null()]),
})
export const AnthropicModelList = Type.Object({
  data: Type.Array(AnthropicModel), has_more: Type.Boolean(), first_id: Type.Union([Type.String(), Type.Null()]), last_id: Type.Union([Type.String(), Type.Null()]),
})
