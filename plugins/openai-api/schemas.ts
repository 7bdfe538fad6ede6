import { Type } from 'typebox'
import { OptionsSchema } from '../../core/config/options-schema.js'

const Role = Type.Union(['system', 'user', 'assistant', 'tool', 'developer'].map((r) => Type.Literal(r)))

// Content is a string or OpenAI's array of parts; llama-server reads both.
const Content = Type.Union([Type.String(), Type.Array(Type.Object({ type: Type.String() })), Type.Null()])

// Optional in requests (rest-interface §2.2): a message without one is the user's.
export const OpenAiMessage = Type.Object({
  role: Type.Optional(Role),
  content: Type.Optional(Content),
  name: Type.Optional(Type.String()),
  tool_calls: Type.Optional(Type.Array(Type.Object({}))),
  tool_call_id: Type.Optional(Type.String()),
})

const Stop = Type.Union([Type.String(), Type.Array(Type.String(), { maxItems: 16 }), Type.Null()])

// OpenAI's tiers: `flex` runs as background work, `priority` (`fast`) as high, the rest at the key's class
// (core/base/priority.ts). vLLM's `priority`, an integer (lower first), is read the same way.
const ServiceTier = Type.Optional(Type.Union([...['auto', 'default', 'flex', 'scale', 'priority', 'fast'].map((t) => Type.Literal(t)), Type.Null()]))
const VllmPriority = Type.Optional(Type.Union([Type.Integer({ minimum: -1_000_000, maximum: 1_000_000 }), Type.Null()]))

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
  // Not OpenAI's, but what users of local servers ask for: seconds or a duration string.
  keep_alive: Type.Optional(Type.Union([Type.Number(), Type.String()])),
  service_tier: ServiceTier,
  priority: VllmPriority,
}

export const ChatCompletionBody = Type.Object({
  ...Common,
  messages: Type.Array(OpenAiMessage, { minItems: 1 }),
  max_completion_tokens: Type.Optional(Type.Union([Type.Integer({ minimum: 1 }), Type.Null()])),
  response_format: Type.Optional(Type.Object({ type: Type.Union([Type.Literal('text'), Type.Literal('json_object'), Type.Literal('json_schema')]) })),
  // llama-server calls functions only: a "custom" tool would come back as its 500.
  tools: Type.Optional(Type.Array(Type.Object({ type: Type.Literal('function'), function: Type.Object({ name: Type.String({ minLength: 1 }) }) }))),
})

export const CompletionBody = Type.Object({
  ...Common,
  prompt: Type.Union([Type.String(), Type.Array(Type.String(), { minItems: 1, maxItems: 1 })]),
})

// The Responses API (`client.responses.create`): `input` is a string or a list of items, translated to a chat for
// llama-server (responses-to-chat.ts). The fields the gateway reads itself; the rest are accepted and not used.
export const ResponsesBody = Type.Object({
  model: Type.String({ minLength: 1 }),
  input: Type.Union([Type.String(), Type.Array(Type.Object({}), { minItems: 1 })]),
  instructions: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  previous_response_id: Type.Optional(Type.Union([Type.String({ minLength: 1 }), Type.Null()])),
  store: Type.Optional(Type.Union([Type.Boolean(), Type.Null()])),
  stream: Type.Optional(Type.Union([Type.Boolean(), Type.Null()])),
  temperature: Type.Optional(Type.Union([Type.Number({ minimum: 0, maximum: 2 }), Type.Null()])),
  top_p: Type.Optional(Type.Union([Type.Number({ exclusiveMinimum: 0, maximum: 1 }), Type.Null()])),
  max_output_tokens: Type.Optional(Type.Union([Type.Integer({ minimum: 1 }), Type.Null()])),
  tools: Type.Optional(Type.Union([Type.Array(Type.Object({ type: Type.String() })), Type.Null()])),
  tool_choice: Type.Optional(Type.Union([Type.String(), Type.Object({ type: Type.String() }), Type.Null()])),
  parallel_tool_calls: Type.Optional(Type.Union([Type.Boolean(), Type.Null()])),
  text: Type.Optional(Type.Union([Type.Object({ format: Type.Optional(Type.Object({ type: Type.String() })) }), Type.Null()])),
  // The effort goes to the template as chat completions' reasoning_effort does; summaries are not made here.
  reasoning: Type.Optional(Type.Union([Type.Object({ effort: Type.Optional(Type.Union([Type.String(), Type.Null()])), summary: Type.Optional(Type.Union([Type.String(), Type.Null()])) }), Type.Null()])),
  metadata: Type.Optional(Type.Union([Type.Record(Type.String(), Type.String()), Type.Null()])),
  options: Type.Optional(OptionsSchema),
  keep_alive: Type.Optional(Type.Union([Type.Number(), Type.String()])),
  service_tier: ServiceTier,
})

export const ResponseIdParams = Type.Object({ id: Type.String({ minLength: 1 }) })

/** GET /v1/responses (admins): each stored response, least recently used first, with the key it belongs to. */
export const ResponseList = Type.Object({
  object: Type.Literal('list'),
  data: Type.Array(Type.Object({
    id: Type.String(),
    model: Type.String(),
    /** The key's name; null: stored while keys were off. */
    owner: Type.Union([Type.String(), Type.Null()]),
    created_at: Type.Union([Type.Integer(), Type.Null()]),
    status: Type.Union([Type.String(), Type.Null()]),
  })),
})
