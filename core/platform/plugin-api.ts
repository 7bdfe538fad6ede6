/**
 * `llamagate/plugin`: what a third-party plugin may use, at run time and as types. Everything here keeps its
 * meaning within a major PLUGIN_API_VERSION; what is not exported here is the gateway's inside and may change.
 * The decorators the built-in plugins add (`app.store`, `app.leases`, `app.scheduler`, ...) come typed with it:
 * the published declarations (scripts/build/build-types.ts) bring each built-in's augmentation of Fastify's types.
 */

/** The version of this API: a plugin may check it (a change that breaks a plugin raises it). */
export const PLUGIN_API_VERSION = 1

export { definePlugin } from './plugin-definition.js'
export type { LlamagatePlugin, PluginSpec } from './plugin-definition.js'
// TypeBox, for a plugin's options schema and route schemas: the same the gateway validates with.
export { Type } from 'typebox'
export type { Static, TSchema } from 'typebox'

// Errors a route or hook throws: each surface answers it in its own shape with the status it carries.
export {
  BadRequestError, ClientGoneError, ConflictError, ContextExceededError, ForbiddenError, GatewayError,
  InvalidModelNameError, ModelNotFoundError, NotFoundError, QueueFullError, RuntimeError, TooManyRequestsError,
  UnauthorizedError, UnavailableError,
} from '../base/errors.js'

// The resolved configuration (`app.config`), widened by each plugin's section through declaration merging.
export type { Config, ConfigLimits, ModelConfig } from '../config/resolved-config.js'
export { configSection, list, numberOrText } from '../config/config-section.js'
export type { ConfigPart, ConfigSection, EnvVariable, SectionContext } from '../config/config-section.js'
export type { ConfigCheck, ConfigCheckContext, DoctorContext, DoctorReport, PluginManifest, StartCheck } from './plugin-manifest.js'

// A surface of one's own: its paths' metrics label and error shape (`app.surfaces.register`).
export type { ErrorShape, SurfaceSpec, Surfaces } from '../base/surfaces.js'
export type { ErrorReply } from '../base/error-shapes.js'
export type { RequestUsage } from '../base/request-usage.js'
export { EventHub } from '../base/event-hub.js'
export { parseModelName } from '../base/model-name.js'
export type { ModelName } from '../base/model-name.js'

// Authenticate: credential types of a plugin's own, asked in order before the API key check (`app.authenticators`).
export type { Authenticator, AuthGrant, AuthResult, Authenticators } from './authenticators.js'
export type { Grant, KeyLimits, Scope } from '../base/grant.js'
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
export type { CallHook, CallHooks, CallOutcome, CallPhase, CallPiece, CallRequest, PieceVerdict } from './call-hooks.js'

// Runtimes: a llama.cpp build kind of one's own (definePlugin's `manifest.runtimes`): its hardware, its binary, its flags.
export { BUILTIN_RUNTIMES } from '../config/runtime-kinds.js'
export type { BuiltinRuntime, DetectContext, RuntimeDevice, RuntimeKind } from '../config/runtime-kinds.js'
