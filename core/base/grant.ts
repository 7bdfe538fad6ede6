import type { PriorityRule } from './priority.js'

/**
 * What a request's credential may do: the grant an API key carries (plugins/security) or an authenticator made
 * (core/platform/authenticators.ts). Here in the core, so that a plugin's credential type is typed as a key is.
 */

/** What a credential may do: `infer` (chat, generate, embed, rerank), `manage` (pull, create, copy, delete, stop,
 * import), `admin` (metrics, runtimes, RPC workers, everyone's usage). */
export type Scope = 'infer' | 'manage' | 'admin'
export const SCOPES: readonly Scope[] = ['infer', 'manage', 'admin']

/** A credential's limits (plugins/quotas), counted under its grant's name. */
export interface KeyLimits {
  /** Requests of this key running or waiting at once. */
  concurrent?: number
  requests_per_minute?: number
  /** Prompt plus generated tokens per UTC day. */
  tokens_per_day?: number
  /** The part (0-1] of a model's queue (`limits.queue_length`) this key's waiting requests may fill. */
  queue_share?: number
}

/** What a valid credential may do, as the requests it authenticates carry it (`request.grant`). */
export interface Grant {
  /** The key's name (`config-1`... for auth.api_keys): the label of its usage, never its secret. */
  readonly name: string
  readonly scopes: ReadonlySet<Scope>
  /** Names, aliases and `*` patterns; `*` alone: every model. */
  readonly models: readonly string[]
  readonly limits: Readonly<KeyLimits>
  /**
   * The prompt-cache group its requests compute and reuse prompts in (the keys file's `cache_group`, else the key's
   * own name); null while every key is in one group, which then shares its caches as a server without keys does.
   */
  readonly cacheGroup: string | null
  /** The priority classes its requests run at (core/base/priority.ts); absent: interactive, and no higher. */
  readonly priority?: PriorityRule
}
