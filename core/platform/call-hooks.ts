import { GatewayError } from '../base/errors.js'
import type { Grant } from '../base/grant.js'

// What a plugin's call hook is and sees; the registry that runs them is call-hook-registry.ts.

/**
 * One inference request as it goes to its model's server, whichever API it came by: llama-server's OpenAI-like
 * fields. A `before` hook may change `model`, `messages`, `system`, `prompt`, `tools` and `options` in place.
 */
export interface CallRequest {
  /** The surface's label: `native`, `openai`, `anthropic`, `decisions`, `audio`, or a plugin's own. */
  readonly surface: string
  /** The client's path (`/api/chat`, `/v1/responses`, ...). */
  readonly route: string
  /** The model that serves it; a `before` hook that names another routes the request there. */
  model: string
  /** The conversation (chat, Responses, Messages): `{ role, content }`, content a string or an array of parts. */
  messages?: Array<Record<string, unknown>>
  /** Anthropic's top-level system prompt (on the other surfaces system messages are in `messages`). */
  system?: unknown
  /** A raw prompt (native generate, OpenAI's text completions): a string, or what the client sent. */
  prompt?: unknown
  tools?: unknown[]
  /** The rest of the fields sent, under llama-server's names (`temperature`, `max_tokens` or `n_predict`, `grammar`...). */
  options: Record<string, unknown>
  /** The API key's name, or null when keys are off or none was shown. */
  readonly key: string | null
  /** What the request's credential may do (`request.grant`): its scopes, models and limits; null with keys off. */
  readonly grant: Grant | null
}

/** One piece of an answer: a streamed delta, or the whole of a whole answer's text, reasoning or a call's arguments. */
export interface CallPiece {
  readonly kind: 'text' | 'reasoning' | 'tool_call'
  /** What goes to the client: a `piece` hook may set it ('' drops it). */
  text: string
  /** True for a whole answer's piece (one per kind), false for a streamed one. */
  readonly whole: boolean
}

/** What a `piece` hook may answer: nothing (the piece goes on, as the hook left it), or `'cut'` to end the answer before it. */
export type PieceVerdict = void | 'cut'

/** A finished answer, for `after` hooks. */
export interface CallOutcome {
  readonly request: Readonly<CallRequest>
  /** The answer's text and reasoning, as the client got them (after every `piece` hook). */
  readonly text: string
  readonly reasoning: string
  /** Tokens read and generated, as the model's server reported them (null where it did not). */
  readonly usage: { readonly promptTokens: number | null, readonly completionTokens: number | null }
  /** From the request reaching the hooks to the answer's end; to its first piece (null: no piece came). */
  readonly timings: { readonly durationMs: number, readonly firstPieceMs: number | null }
  readonly streamed: boolean
  /** A `piece` hook ended the answer early. */
  readonly cut: boolean
}

/**
 * A plugin's hooks on every inference call (native chat and generate, OpenAI chat, completions and Responses,
 * Anthropic Messages, transcriptions; decisions without pieces), each optional. A hook that throws a gateway error of status 4xx (ForbiddenError,
 * BadRequestError) refuses the request in its surface's shape; any other throw, rejection, or a hook that takes
 * longer than limits.hook_timeout, fails only that request with a 500, the plugin named in the log.
 */
export interface CallHook {
  /** The plugin's name, in every log line about its hooks. */
  name: string
  /** Before the model's server is asked: may rewrite `request` in place, route it (`request.model`), or refuse it. */
  before?(request: CallRequest): void | Promise<void>
  /**
   * Started once the `before` hooks left the request, run while the model answers (moderation by a slow classifier,
   * a budget check elsewhere). Throwing or rejecting with a refusal (a 4xx) cancels the call: the model's server is
   * told to stop and the client gets the refusal. An answer that finished first waits for it (bounded by
   * limits.hook_timeout) before it is returned or its stream ends. `signal` aborts when the call ends or is cancelled.
   */
  alongside?(request: Readonly<CallRequest>, signal: AbortSignal): void | Promise<void>
  /** Each piece of the answer, streamed or whole, in order: may read it, set its `text`, or cut the answer there. */
  piece?(piece: CallPiece, request: Readonly<CallRequest>): PieceVerdict | Promise<PieceVerdict>
  /**
   * The answer's end (streamed or whole, finished or cut; not a failure), once, before its finish goes out: what a
   * `piece` hook held back (the start of a match the next piece might have ended) is released here. The text it
   * returns goes out as the answer's last text, through the `piece` hooks registered after this one.
   */
  end?(request: Readonly<CallRequest>): string | void | Promise<string | void>
  /** Once the answer went out whole: audit, billing. */
  after?(outcome: CallOutcome): void | Promise<void>
  /** When the request failed (refusals by hooks included); what it throws is logged, never answered. */
  failure?(error: unknown, request: Readonly<CallRequest>): void | Promise<void>
}

export type CallPhase = 'before' | 'alongside' | 'piece' | 'end' | 'after' | 'failure'

/** A hook that threw, rejected or hung: its request fails with this 500 (the cause is in the log). */
export class HookFailedError extends GatewayError {
  constructor (readonly plugin: string, readonly phase: CallPhase, cause: unknown) {
    super(500, `the plugin "${plugin}" failed in its ${phase} hook: see the server log`, { code: 'hook_failed', cause })
  }
}

/** Where a failing hook is told (the request's log). */
export interface HookLog { error(obj: object, msg: string): void }
