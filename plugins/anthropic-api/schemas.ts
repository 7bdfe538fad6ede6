import { Type } from 'typebox'
import { OptionsSchema } from '../../core/config/options-schema.js'

// Anthropic's content: a string or a list of blocks (text, image, tool_use, tool_result, thinking). A block's
// `text` is checked here: llama-server answers a non-string one with a 500.
const Content = Type.Union([Type.String(), Type.Array(Type.Object({ type: Type.String(), text: Type.Optional(Type.String()) }))])

// `system` messages among the others are valid in Anthropic's current API (Claude Code sends one after the first
// user message); the gateway places them where the model's template takes them (messages-body.ts).
const Message = Type.Object({
  role: Type.Union([Type.Literal('user'), Type.Literal('assistant'), Type.Literal('system')]),
  content: Content,
})

const Tool = Type.Object({ name: Type.String({ minLength: 1 }), input_schema: Type.Optional(Type.Object({})) })

/** The Messages fields the gateway reads itself; the rest go to llama-server, which speaks Anthropic's API. */
const Common = {
  model: Type.String({ minLength: 1 }),
  messages: Type.Array(Message, { minItems: 1 }),
  system: Type.Optional(Content),
  tools: Type.Optional(Type.Array(Tool)),
  // Not Anthropic's: the gateway's own, as on the other surfaces.
  options: Type.Optional(OptionsSchema),
  keep_alive: Type.Optional(Type.Union([Type.Number(), Type.String()])),
}

export const MessagesBody = Type.Object({
  ...Common,
  max_tokens: Type.Optional(Type.Integer({ minimum: 1 })),
  stream: Type.Optional(Type.Boolean()),
  temperature: Type.Optional(Type.Number({ minimum: 0, maximum: 2 })),
  top_p: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 1 })),
  top_k: Type.Optional(Type.Integer({ minimum: 0 })),
  stop_sequences: Type.Optional(Type.Array(Type.String())),
})

export const CountTokensBody = Type.Object(Common)
