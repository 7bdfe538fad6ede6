/**
 * `llamagate/plugin`: what a third-party plugin may use, at run time and as types, and nothing else. Its published
 * declarations (scripts/build/build-types.ts) are this module's and what it reaches: Fastify's instance carries the
 * registries and read-only views of GatewayDecorators, not the built-ins' services, which may change at any time.
 */

/**
 * The version of this API. A change that can break a plugin written against it (a name or decorator gone, a type
 * narrowed, a hook's meaning changed) raises it; additions keep it. A plugin may check it at registration.
 */
export const PLUGIN_API_VERSION = 2

export { definePlugin } from './plugin-definition.js'
export type { LlamagatePlugin, PluginSpec } from './plugin-definition.js'
// TypeBox, for a plugin's options schema and route schemas: the same the gateway validates with.
export { Type } from 'typebox'
export type { Static, TSchema } from 'typebox'

// What a plugin finds on `app` and on a request: the registries below and read-only views.
export type { GatewayDecorators, GatewayRequestFields } from './gateway-decorators.js'
export type { StoredModel, StoredModels } from './stored-models.js'
export type { DecisionAsker, SystemOneAnswer, SystemOneAsk, SystemOneReply } from './decision-asker.js'

// Errors a route or hook throws: each surface answers it in its own shape with the status it carries.
export {
  BadRequestError, ClientGoneError, ConflictError, ContextExceededError, ForbiddenError, GatewayError,
  InvalidModelNameError, ModelNotFoundError, NotFoundError, QueueFullError, RuntimeError, TooManyRequestsError,
  UnauthorizedError, UnavailableError,
} from '../base/errors.js'

// The resolved configuration (`app.config`), widened by a plugin's own section through declaration merging.
export type { Config, ConfigLimits, ModelConfig } from '../config/resolved-config.js'
export { configSection, list, numberOrText } from '../config/config-section.js'
export type { ConfigPart, ConfigSection, EnvVariable, SectionContext } from '../config/config-section.js'
export type { ConfigCheck, ConfigCheckContext, DoctorContext, DoctorReport, PluginManifest, StartCheck } from './plugin-manifest.js'

// A surface of one's own: its paths' metrics label and error shape (`app.surfaces.register`).
export type { ErrorShape, SurfaceSpec } from '../base/surfaces.js'
export type { ErrorReply } from '../base/error-shapes.js'

// Authenticate: credential types of a plugin's own, asked in order before the API key check (`app.authenticators.add`).
export type { Authenticator, AuthGrant, AuthResult } from './authenticators.js'
export type { Grant, KeyLimits, Scope } from '../base/grant.js'
export type { Priority, PriorityRule } from '../base/priority.js'
// CLI commands, doctor checks and config sections of a plugin's manifest (definePlugin's `manifest`); the
// `httpErrors`, `reply.notFound()`, `reply.vary()` and `reply.cacheControl()` of @fastify/sensible come typed with it.
export type { Command, CommandContext, OptionSpec } from './command.js'
export type { Check } from './check.js'
export type { HttpErrors } from '@fastify/sensible'

// Registries: a backend of one's own (`app.backends.add`), a model source answering pulls (`app.modelSources.add`).
export type { BackendSpec, Backends } from './backends.js'
export type { ModelSourceSpec, ModelSources, PullContext, PullProgress } from '../base/model-sources.js'

// Call hooks: before, alongside, each piece, after, failure of every inference call, whichever surface (`app.callHooks.add`).
export { HookFailedError } from './call-hooks.js'
export type { CallHook, CallOutcome, CallPhase, CallPiece, CallRequest, PieceVerdict } from './call-hooks.js'

// Runtimes: a llama.cpp build kind of one's own (definePlugin's `manifest.runtimes`): its hardware, its binary, its flags.
export { BUILTIN_RUNTIMES } from '../config/runtime-kinds.js'
export type { BuiltinRuntime, DetectContext, RuntimeDevice, RuntimeKind } from '../config/runtime-kinds.js'
