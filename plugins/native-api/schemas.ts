import { Type } from 'typebox'
import { OptionsSchema } from '../../core/config/options-schema.js'
import { TagSchema } from '../models-api/schemas.js'

const Role = Type.Union([Type.Literal('system'), Type.Literal('user'), Type.Literal('assistant'), Type.Literal('tool')])

export const NativeMessage = Type.Object({
  role: Type.Optional(Role),
  content: Type.Optional(Type.String()),
  images: Type.Optional(Type.Array(Type.String())),
  tool_calls: Type.Optional(Type.Array(Type.Object({
    function: Type.Object({ name: Type.String(), arguments: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.String()]) }),
  }))),
  tool_name: Type.Optional(Type.String()),
  tool_call_id: Type.Optional(Type.String()),
})

const KeepAlive = Type.Union([Type.Number(), Type.String()])
// Ollama's `think`: on, off, or an effort for models that take one.
const Think = Type.Union([Type.Boolean(), Type.Literal('low'), Type.Literal('medium'), Type.Literal('high'), Type.Literal('max')])
// Ollama's: each token's log probability, with up to 20 alternatives (its range is checked by logprobs.ts, in its words).
const Logprobs = { logprobs: Type.Optional(Type.Boolean()), top_logprobs: Type.Optional(Type.Integer()) }
// "json", or a JSON schema (an object)
const Format = Type.Union([Type.Literal('json'), Type.Literal(''), Type.Object({})])
const Tool = Type.Object({ type: Type.String(), function: Type.Object({ name: Type.String({ minLength: 1 }) }) })

export const ChatBody = Type.Object({
  model: Type.String({ minLength: 1 }),
  messages: Type.Optional(Type.Array(NativeMessage)),
  stream: Type.Optional(Type.Boolean()),
  options: Type.Optional(OptionsSchema),
  format: Type.Optional(Format),
  tools: Type.Optional(Type.Array(Tool)),
  think: Type.Optional(Think),
  keep_alive: Type.Optional(KeepAlive),
  // Ollama's: drop the oldest messages of a conversation longer than the model can hold (default), or refuse it.
  truncate: Type.Optional(Type.Boolean()),
  // Ollama's context shift; llama-server has none per request: a reply ends where the context does (done_reason "length").
  shift: Type.Optional(Type.Boolean()),
  ...Logprobs,
})

export const GenerateBody = Type.Object({
  model: Type.String({ minLength: 1 }),
  prompt: Type.Optional(Type.String()),
  // Fill-in-the-middle: the code after the gap, `prompt` the code before it.
  suffix: Type.Optional(Type.String()),
  system: Type.Optional(Type.String()),
  raw: Type.Optional(Type.Boolean()),
  stream: Type.Optional(Type.Boolean()),
  options: Type.Optional(OptionsSchema),
  format: Type.Optional(Format),
  think: Type.Optional(Think),
  keep_alive: Type.Optional(KeepAlive),
  images: Type.Optional(Type.Array(Type.String())),
  truncate: Type.Optional(Type.Boolean()),
  shift: Type.Optional(Type.Boolean()),
  ...Logprobs,
})

export const ModelBody = Type.Object({ model: Type.String({ minLength: 1 }) })

/**
 * One entry of /api/ps: Ollama's fields, then this gateway's. `where` says where it runs: a llama-server here
 * (`runtime` its backend), or config.yaml's `upstream` (`remote_host`, `remote_model`, as Ollama marks its remote
 * models); optional, so that Ollama's clients read the list as they always did.
 */
export const PsEntry = Type.Object({
  name: Type.String(),
  model: Type.String(),
  size: Type.Integer(),
  format: Type.String(),
  // The scheduler's model may carry none (ports.ts): then the field is left out, as before.
  digest: Type.Optional(Type.String()),
  details: TagSchema.properties.details,
  expires_at: Type.String(),
  size_vram: Type.Integer(),
  context_length: Type.Integer(),
  max_context_length: Type.Integer(),
  num_parallel: Type.Integer(),
  state: Type.Union([Type.Literal('loading'), Type.Literal('loaded'), Type.Literal('unloading')]),
  purpose: Type.String(),
  runtime: Type.Union([Type.String(), Type.Null()]),
  pid: Type.Union([Type.Integer(), Type.Null()]),
  active_requests: Type.Integer(),
  queued_requests: Type.Integer(),
  loading: Type.Union([Type.Object({ elapsed: Type.Number(), expected: Type.Union([Type.Number(), Type.Null()]) }), Type.Null()]),
  expected_wait: Type.Union([Type.Number(), Type.Null()]),
  rpc_workers: Type.Array(Type.String()),
  // The scheduler's measured costs of a local model (seconds, tokens/s; null: not measured yet), and what it replaced.
  estimates: Type.Optional(Type.Record(Type.String(), Type.Union([Type.Number(), Type.Null()]))),
  swap: Type.Optional(Type.Union([Type.Object({ replaced: Type.String(), reason: Type.String() }), Type.Null()])),
  where: Type.Optional(Type.Union([Type.Literal('local'), Type.Literal('upstream')])),
  upstream: Type.Optional(Type.String()),
  remote_host: Type.Optional(Type.String()),
  remote_model: Type.Optional(Type.String()),
})
// A runtime prepared ahead, none of the room taken: its load waits for room, or its model was given up for another.
export const PreparedEntry = Type.Object({
  name: Type.String(),
  purpose: Type.Union([Type.Literal('generate'), Type.Literal('embed'), Type.Literal('rerank')]),
  pid: Type.Union([Type.Integer(), Type.Null()]),
  why: Type.Union([Type.Literal('waiting_for_room'), Type.Literal('standing_by')]),
  expires_at: Type.Union([Type.String(), Type.Null()]),
})
export const PsReply = Type.Object({ models: Type.Array(PsEntry), prepared: Type.Optional(Type.Array(PreparedEntry)) })
