import { Type } from 'typebox'

export const ModelBody = Type.Object({ model: Type.String({ minLength: 1 }) })
export const ImportBody = Type.Object({
  model: Type.String({ minLength: 1 }),
  /** An absolute path on the server's machine (a relative one is taken from the server's working folder). */
  path: Type.String({ minLength: 1 }),
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

export const TagsReply = Type.Object({ models: Type.Array(ModelRecordSchema) })

/** rest-interface §4.5: `modelfile` and `details`, plus what the GGUF says about itself (Ollama's `model_info`). */
export const ShowReply = Type.Object({
  modelfile: Type.String(),
  details: ModelRecordSchema,
  model_info: Type.Record(Type.String(), Type.Unknown()),
  template: Type.String(),
  modified_at: Type.String(),
})

export const DeleteReply = Type.Object({ status: Type.Literal('deleted') })

export const OpenAiModel = Type.Object({
  id: Type.String(), object: Type.Literal('model'), created: Type.Integer(), owned_by: Type.String(),
})
export const OpenAiModelList = Type.Object({ object: Type.Literal('list'), data: Type.Array(OpenAiModel) })
