import { Type } from 'typebox'
import { OptionsSchema } from '../../core/options-schema.js'

const Role = Type.Union(['system', 'user', 'assistant', 'tool', 'developer'].map((r) => Type.Literal(r)))

// Content is a string or OpenAI's array of parts; llama-server reads both.
const Content = Type.Union([Type.String(), Type.Array(Type.Object({ type: Type.String() })), Type.Null()])

export const OpenAiMessage = Type.Object({
  role: Role,
  content: Type.Optional(Content),
  name: Type.Optional(Type.String()),
  tool_calls: Type.Optional(Type.Array(Type.Object({}))),
  tool_call_id: Type.Optional(Type.String()),
})

const Stop = Type.Union([Type.String(), Type.Array(Type.String(), { maxItems: 16 }), Type.Null()])

/** The OpenAI fields the gateway reads itself; the rest pass through to llama-server, which speaks them. */
const Common = {
  model: Type.String({ minLength: 1 }),
  stream: Type.Optional(Type.Boolean()),
  stream_options: Type.Optional(Type.Union([Type.Object({ include_usage: Type.Optional(Type.Boolean()) }), Type.Null()])),
  temperature: Type.Optional(Type.Union([Type.Number({ minimum: 0, maximum: 2 }), Type.Null()])),
  top_p: Type.Optional(Type.Union([Type.Number({ exclusiveMinimum: 0, maximum: 1 }), Type.Null()])),
  max_tokens: Type.Optional(Type.Union([Type.Integer({ minimum: 1 }), Type.Null()])),
  seed: Type.Optional(Type.Union([Type.Integer(), Type.Null()])),
  stop: Type.Optional(Stop),
  presence_penalty: Type.Optional(Type.Union([Type.Number({ minimum: -2, maximum: 2 }), Type.Null()])),
  frequency_penalty: Type.Optional(Type.Union([Type.Number({ minimum: -2, maximum: 2 }), Type.Null()])),
  n: Type.Optional(Type.Union([Type.Literal(1), Type.Null()])),
  options: Type.Optional(OptionsSchema),
  // Not OpenAI's, but what users of local servers ask for (Ollama #9355): seconds or a duration string.
  keep_alive: Type.Optional(Type.Union([Type.Number(), Type.String()])),
}

export const ChatCompletionBody = Type.Object({
  ...Common,
  messages: Type.Array(OpenAiMessage, { minItems: 1 }),
  max_completion_tokens: Type.Optional(Type.Union([Type.Integer({ minimum: 1 }), Type.Null()])),
  response_format: Type.Optional(Type.Object({ type: Type.Union([Type.Literal('text'), Type.Literal('json_object'), Type.Literal('json_schema')]) })),
  tools: Type.Optional(Type.Array(Type.Object({ type: Type.String(), function: Type.Object({ name: Type.String() }) }))),
})

export const CompletionBody = Type.Object({
  ...Common,
  prompt: Type.Union([Type.String(), Type.Array(Type.String(), { minItems: 1, maxItems: 1 })]),
})
