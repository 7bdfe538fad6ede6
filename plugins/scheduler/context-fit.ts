// How large a context a prompt gets when it does not fit the one loaded: sizes on a ladder, so that a growing
// conversation reloads the model a few times over its life rather than on every turn.
const LADDER = [8192, 16_384, 32_768, 65_536, 131_072, 262_144]
// Room for the reply when the request sets no limit (max_tokens -1).
const DEFAULT_REPLY = 4096
// A model whose header says nothing of its training is not grown past this.
const UNKNOWN_TRAINED = 131_072

/**
 * The most a chat model's context grows to for prompts that need it (planContext's cap): its trained context, or
 * UNKNOWN_TRAINED when its header says nothing; never less than what is loaded now. The memory may hold less.
 */
export function growthCap (trained: number | null | undefined, loaded = 0): number {
  return Math.max(trained ?? UNKNOWN_TRAINED, loaded)
}

/**
 * The context each slot of llama-server really holds for a num_ctx: llama-server caps a slot at the model's trained
 * context (n_ctx_slot), whatever --ctx-size asks.
 */
export function servedContext (numCtx: number, trained: number | null | undefined): number {
  return trained ? Math.min(numCtx, trained) : numCtx
}

/** The load options a context plan sets. */
export interface ContextPlan { numCtx: number, numParallel: number }

export interface ContextNeed {
  promptTokens: number
  /** The reply's limit (max_tokens); -1 or 0: none. */
  reply: number
  /** What the instance that refused it was loaded with. */
  current: ContextPlan
  /** The model's trained context (its GGUF's context_length), if known. */
  trained: number | null | undefined
  /** Whether a context of `numCtx` for each of `numParallel` slots fits the memory the model could have. */
  fits: (plan: ContextPlan) => boolean
}

/**
 * The smallest ladder size that holds the prompt and its reply, at most the trained context (a prompt that only
 * fits without its whole reply gets what there is: the reply then ends at the context's end); fewer slots before a
 * smaller context when the memory cannot hold them all. `{ limit }` when the prompt cannot fit: the most it could have.
 */
export function planContext (need: ContextNeed): ContextPlan | { limit: number, why: string } {
  const cap = need.trained ?? UNKNOWN_TRAINED
  // llama-server needs one position past the prompt to generate anything.
  if (need.promptTokens + 1 > cap) return { limit: cap, why: need.trained ? ' (its trained context)' : '' }
  const wanted = need.promptTokens + (need.reply > 0 ? need.reply : DEFAULT_REPLY)
  const sizes = [...LADDER.filter((n) => n < cap), cap].filter((n) => n > need.promptTokens)
  const start = sizes.findIndex((n) => n >= wanted)
  // From the size wanted down to the smallest that still holds the prompt (and beats the current one), each with
  // the configured slots first, then fewer.
  const candidates = (start === -1 ? sizes : sizes.slice(0, start + 1)).reverse()
  for (const numCtx of candidates) {
    if (numCtx <= need.current.numCtx) break
    for (let parallel = need.current.numParallel; parallel >= 1; parallel--) {
      if (need.fits({ numCtx, numParallel: parallel })) return { numCtx, numParallel: parallel }
    }
  }
  return { limit: need.current.numCtx, why: ' (the memory holds no larger context)' }
}
