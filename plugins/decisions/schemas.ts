import { Type } from 'typebox'

const KeepAlive = Type.Union([Type.Number(), Type.String()])

/**
 * System One's request. Its fields are read by systemone-request.ts, which answers each broken rule with
 * llama.cpp's status and words (422, 413, 501): the schema only names them.
 */
export const SystemOneBody = Type.Object({
  model: Type.String({ minLength: 1 }),
  state: Type.Optional(Type.Unknown()),
  questions: Type.Optional(Type.Unknown()),
  images: Type.Optional(Type.Unknown()),
  files: Type.Optional(Type.Unknown()),
  videos: Type.Optional(Type.Unknown()),
  keep_alive: Type.Optional(KeepAlive),
})

const Instructions = Type.Union([Type.String({ minLength: 1 }), Type.Array(Type.Unknown(), { minItems: 1 })])
const Name = Type.Optional(Type.Union([Type.String({ maxLength: 256 }), Type.Null()]))

/** OpenAI's Decisions request (`client.decisions.create`): questions answered in order. */
export const DecisionsBody = Type.Object({
  model: Type.String({ minLength: 1 }),
  input: Type.Union([Type.String(), Type.Array(Type.Unknown(), { minItems: 1 })]),
  questions: Type.Array(Type.Union([
    Type.Object({ type: Type.Literal('predicate'), name: Name, instructions: Instructions }),
    Type.Object({
      type: Type.Literal('choice'), name: Name, instructions: Instructions,
      choices: Type.Array(Type.Object({ value: Type.Union([Type.String(), Type.Boolean()]), description: Type.Optional(Type.Union([Type.String(), Type.Null()])) }), { minItems: 2, maxItems: 255 }),
    }),
    Type.Object({
      type: Type.Literal('score'), name: Name, instructions: Instructions,
      levels: Type.Array(Type.Object({ label: Type.String(), description: Type.Optional(Type.Union([Type.String(), Type.Null()])) }), { minItems: 2, maxItems: 10 }),
    }),
  ]), { minItems: 1, maxItems: 400 }),
  prompt_cache_key: Type.Optional(Type.String()),
  prompt_cache_options: Type.Optional(Type.Unknown()),
  safety_identifier: Type.Optional(Type.String()),
  keep_alive: Type.Optional(KeepAlive),
})
