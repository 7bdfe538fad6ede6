/**
 * A request's priority class: `interactive` (a person or an agent waiting on the answer: the default), `background`
 * (work nobody waits on: it takes free slots and free room only, and gives way), and `high` (ahead of interactive).
 * Chosen by the request (OpenAI's `service_tier`, vLLM's `priority`), capped by its key (the keys file's
 * `priority` and `max_priority`).
 */
export type Priority = 'background' | 'interactive' | 'high'

/** Lowest first. */
export const PRIORITIES: readonly Priority[] = ['background', 'interactive', 'high']

/** Its rank: a higher one goes first. */
export function priorityRank (priority: Priority): number {
  return PRIORITIES.indexOf(priority)
}

/** What a credential allows: its requests' class when they ask none, and the highest they may ask for. */
export interface PriorityRule {
  /** @default 'interactive' */
  readonly default?: Priority
  /** @default the default class, or 'interactive' if that is lower */
  readonly max?: Priority
}

/** OpenAI's `service_tier` as a class: `flex` is background, `priority` (and `fast`) high; `auto`, `default`, `scale` ask none. */
export function priorityOfServiceTier (tier: unknown): Priority | undefined {
  return tier === 'flex' ? 'background' : tier === 'priority' || tier === 'fast' ? 'high' : undefined
}

/** vLLM's `priority` (an integer, lower first, 0 by default) as a class: below 0 high, above 0 background. */
export function priorityOfVllm (priority: unknown): Priority | undefined {
  if (typeof priority !== 'number' || priority === 0) return undefined
  return priority < 0 ? 'high' : 'background'
}

/** A class as OpenAI's answers name the tier they ran on. */
export function serviceTierOf (priority: Priority): 'flex' | 'default' | 'priority' {
  return priority === 'background' ? 'flex' : priority === 'high' ? 'priority' : 'default'
}
