import { Type } from 'typebox'
import { OptionsSchema } from '../../core/config/options-schema.js'

const KeepAlive = Type.Union([Type.Number(), Type.String()])
const Dimensions = Type.Integer({ minimum: 1 })

/** Ollama's `/api/embed`: no input, an empty string or an empty list only loads the model. */
export const EmbedBody = Type.Object({
  model: Type.String({ minLength: 1 }),
  input: Type.Optional(Type.Union([Type.String(), Type.Array(Type.String())])),
  truncate: Type.Optional(Type.Boolean()),
  dimensions: Type.Optional(Dimensions),
  options: Type.Optional(OptionsSchema),
  keep_alive: Type.Optional(KeepAlive),
})

/** Ollama's legacy `/api/embeddings`: one `prompt`, an unnormalized `embedding`. */
export const LegacyEmbeddingsBody = Type.Object({
  model: Type.String({ minLength: 1 }),
  prompt: Type.Optional(Type.String()),
  options: Type.Optional(OptionsSchema),
  keep_alive: Type.Optional(KeepAlive),
})

// llama.cpp's token ids are int32.
const TokenIds = Type.Array(Type.Integer({ minimum: 0, maximum: 2 ** 31 - 1 }), { minItems: 1 })

/** OpenAI's `/v1/embeddings`: text or token ids, one or a list; `truncate` is Ollama's, which its /v1 honours too. */
export const OpenAiEmbeddingsBody = Type.Object({
  model: Type.String({ minLength: 1 }),
  input: Type.Union([
    Type.String({ minLength: 1 }),
    Type.Array(Type.String({ minLength: 1 }), { minItems: 1 }),
    TokenIds,
    Type.Array(TokenIds, { minItems: 1 }),
  ]),
  encoding_format: Type.Optional(Type.Union([Type.Literal('float'), Type.Literal('base64')])),
  dimensions: Type.Optional(Dimensions),
  user: Type.Optional(Type.String()),
  truncate: Type.Optional(Type.Boolean()),
  options: Type.Optional(OptionsSchema),
  keep_alive: Type.Optional(KeepAlive),
})

/** A document to rank: text, or Cohere's `{ text }`. */
const RerankDocument = Type.Union([Type.String(), Type.Object({ text: Type.String() })])

/** Jina's and Cohere's rerank request, as llama-server takes it. */
export const RerankBody = Type.Object({
  model: Type.String({ minLength: 1 }),
  query: Type.String({ minLength: 1 }),
  documents: Type.Array(RerankDocument, { minItems: 1 }),
  top_n: Type.Optional(Type.Integer({ minimum: 1 })),
  return_documents: Type.Optional(Type.Boolean()),
  options: Type.Optional(OptionsSchema),
  keep_alive: Type.Optional(KeepAlive),
})
