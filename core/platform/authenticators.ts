import type { FastifyRequest } from 'fastify'
import type { KeyLimits, Scope } from '../base/grant.js'
import type { PriorityRule } from '../base/priority.js'

// A plugin's credential type; the registry that asks them in order is authenticator-registry.ts.

/** What an authenticator grants a request it accepts: it is then scoped as a key with these would be. */
export interface AuthGrant {
  /** The name its usage is counted under, its limits kept by and its refusals say, as a key's name: never a secret. */
  name: string
  /** What it may reach (`infer`, `manage`, `admin`): a route needing another scope answers 403. */
  scopes: readonly Scope[]
  /** Model names, aliases and `*` patterns it may use; `['*']`: every model. Others answer 403. */
  models: readonly string[]
  /** Its limits (concurrent, requests_per_minute, tokens_per_day, queue_share), as the keys file's. @default {} */
  limits?: KeyLimits
  /** Whose computed prompts its requests may reuse (the keys file's `cache_group`). @default its name */
  cacheGroup?: string
  /**
   * Its requests' priority class when they ask none, and the highest they may ask for (the keys file's `priority`
   * and `max_priority`). @default interactive, and no higher
   */
  priority?: PriorityRule
}

/** An authenticator's answer: a grant (accepted), or nothing (not its credential: the next one is asked). */
export type AuthResult = AuthGrant | null | undefined

/** A credential type: asked for each request before the API key check. */
export interface Authenticator {
  /** Its name (its plugin's, best): the log names it when it fails. */
  name: string
  /** Lower runs first; equal orders keep the order they were added in. @default 0 */
  order?: number
  /**
   * Its grants may carry an API key's name, sharing that key's usage, limits and cached prompts: it vouches for the
   * key (a credential the key itself made, as a batch's requests run under the key that made the batch). Without it,
   * a grant in a key's name is refused as a bug. @default false
   */
  actsForKeys?: boolean
  /**
   * Judges the request at the door, its headers read but not its body: returns a grant, or nothing when the request
   * carries no credential of its kind. Throws UnauthorizedError (401) or ForbiddenError (403) to refuse it. `signal`
   * aborts when `limits.hook_timeout` has passed (the request has been answered 504 then).
   */
  authenticate(request: FastifyRequest, signal: AbortSignal): AuthResult | Promise<AuthResult>
}
