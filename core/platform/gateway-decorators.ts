import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { Authenticator } from './authenticators.js'
import type { Backends } from './backends.js'
import type { CallHook } from './call-hooks.js'
import type { DecisionAsker } from './decision-asker.js'
import type { Grant } from '../base/grant.js'
import type { ModelSources } from '../base/model-sources.js'
import type { Config } from '../config/resolved-config.js'
import type { StoredModels } from './stored-models.js'
import type { SurfaceSpec } from '../base/surfaces.js'

/**
 * What a plugin finds on the app (`llamagate/plugin` publishes Fastify's instance with these, and nothing more of the
 * built-ins): the registries it adds to and the read-only views it reads. The built-in plugins decorate the app
 * with their whole services; merged into Fastify's instance below, each must stay assignable to its view here, so a
 * change to a service that breaks what plugins were promised fails the typecheck.
 */
export interface GatewayDecorators {
  /** The resolved configuration: durations in ms, sizes in bytes, absolute paths; a plugin's section widens it. */
  config: Config
  /** Lines joined into the start-up log line; a plugin may add its own. */
  startupNotes: string[]
  /** A surface of one's own: its paths' metrics label and error shape. */
  surfaces: { register(spec: SurfaceSpec): void }
  /** Credential types of one's own, asked in `order` before the API key check. */
  authenticators: { add(authenticator: Authenticator): void }
  /** Hooks on every inference call, whichever surface: before, alongside, each piece, after, failure. */
  callHooks: { add(hook: CallHook): void }
  /** Backends of one's own: models served through the plugin's `fetch`. */
  backends: Backends
  /** Model sources answering pulls of the names they claim, before the hub. */
  modelSources: ModelSources
  /** The stored models, read only. */
  store: StoredModels
  /** Decisions on local models (a guardrail asking a decision model). */
  decisions: DecisionAsker
}

/** What a plugin finds on a request, once the door let it in. */
export interface GatewayRequestFields {
  /** What the key (or a plugin's credential) the request showed may do; null when keys are off or none was shown. */
  grant: Grant | null
  /** Whether the caller may see the server's details: keys are off, or it showed a valid credential. */
  keyHolder: boolean
}

declare module 'fastify' {
  interface FastifyInstance extends GatewayDecorators {}
  interface FastifyRequest extends GatewayRequestFields {}
}

// Fastify's own declaration comes first and its checks are skipped with the library's, so the merge above does not
// hold a built-in's decoration to its view: these do, in the project's typecheck, where every built-in is declared.
type Fits<App extends GatewayDecorators, Request extends GatewayRequestFields> = [App, Request]
export type BuiltinsFitTheirViews = Fits<FastifyInstance, FastifyRequest>
