import { Type } from 'typebox'

// Form fields arrive as strings (multipart has no types): numbers and flags are checked as the text they are.
const DECIMAL = '^-?(?:[0-9]+(?:\\.[0-9]*)?|\\.[0-9]+)(?:[eE][-+]?[0-9]+)?$'

/**
 * OpenAI's `/v1/audio/transcriptions` form (multipart/form-data), as @fastify/multipart's key-values give it: the
 * audio as `file` (bytes; checked by the handler), the rest as text. Fields OpenAI has that change nothing here
 * (`chunking_strategy`, `include[]`) are let through.
 */
export const TranscriptionForm = Type.Object({
  file: Type.Optional(Type.Unsafe<unknown>({})),
  model: Type.String({ minLength: 1 }),
  language: Type.Optional(Type.String({ maxLength: 32 })),
  prompt: Type.Optional(Type.String()),
  response_format: Type.Optional(Type.String()),
  // A JSON body's numbers pass too, so that its other faults (no file) are told rather than a field's type.
  temperature: Type.Optional(Type.Union([Type.String({ pattern: DECIMAL }), Type.Number()])),
  max_tokens: Type.Optional(Type.Union([Type.String({ pattern: '^[0-9]{1,9}$' }), Type.Integer({ minimum: 0 })])),
  stream: Type.Optional(Type.Union([Type.Literal('true'), Type.Literal('false')])),
  'timestamp_granularities[]': Type.Optional(Type.Union([Type.String(), Type.Array(Type.String())])),
  keep_alive: Type.Optional(Type.String()),
}, { additionalProperties: true })
