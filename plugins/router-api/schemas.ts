import { Type } from 'typebox'

const MaybeInteger = Type.Union([Type.Integer(), Type.Null()])

/** `POST /models/load` and `/models/unload`: the model by name (an alias reaches its model). */
export const RouterModelBody = Type.Object({ model: Type.String() })
export const SuccessReply = Type.Object({ success: Type.Literal(true) })

/** `GET /props`: `model` names the model (router mode); `autoload=false` refuses one that is not loaded. */
export const PropsQuery = Type.Object({ model: Type.Optional(Type.String()), autoload: Type.Optional(Type.String()) })
/** The loaded llama-server's own /props (or the router's own, without `model`): passed on as it answered. */
export const PropsReply = Type.Record(Type.String(), Type.Unknown())

export const ModelsQuery = Type.Object({ reload: Type.Optional(Type.String()) })

/** One model of `GET /models`, as llama-server's router lists it (server-models.cpp), with its `/v1/models` fields. */
export const RouterModel = Type.Object({
  id: Type.String(),
  aliases: Type.Array(Type.String()),
  tags: Type.Array(Type.String()),
  object: Type.Literal('model'),
  owned_by: Type.String(),
  created: Type.Integer(),
  status: Type.Object({
    value: Type.Union([Type.Literal('loaded'), Type.Literal('loading'), Type.Literal('unloaded')]),
    args: Type.Array(Type.String()),
    failed: Type.Optional(Type.Boolean()),
    exit_code: Type.Optional(Type.Integer()),
  }),
  architecture: Type.Object({ input_modalities: Type.Array(Type.String()), output_modalities: Type.Array(Type.String()) }),
  source: Type.String(),
  can_remove: Type.Boolean(),
  context_window: Type.Integer(),
  max_context_length: Type.Integer(),
  meta: Type.Object({ n_ctx: Type.Integer(), n_ctx_train: MaybeInteger, n_params: MaybeInteger, size: Type.Integer() }),
})
export const RouterModelsReply = Type.Object({ data: Type.Array(RouterModel), object: Type.Literal('list') })

/**
 * The body of llama-server's own routes (/tokenize, /detokenize, /apply-template, /infill) with the model named: the
 * rest is that route's, which llama-server checks and answers as it does.
 */
export const RuntimeRouteBody = Type.Object({
  model: Type.String({ minLength: 1 }),
  keep_alive: Type.Optional(Type.Union([Type.Number(), Type.String()])),
}, { additionalProperties: true })
