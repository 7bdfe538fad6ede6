import { BadRequestError } from '../../core/base/errors.js'

/**
 * The body fields a request may hand to llama-server, per surface, and the ones refused by name. llama-server
 * reads fields that step around what the gateway promises every client: `n_cmpl` ran four completions in four
 * slots while the scheduler counted one (another client waited 20 s instead of 0.03 s), `id_slot` picks a slot,
 * `response_fields` strips the usage the gateway counts. A field not listed is not sent (llama-server would
 * have ignored an unknown one anyway); a refused one is a 400 that names it.
 */

/** Sampling and output settings llama-server reads on every completion endpoint (tools/server/server-schema.cpp). */
const SAMPLING = [
  'temperature', 'top_k', 'top_p', 'min_p', 'top_n_sigma', 'typical_p', 'xtc_probability', 'xtc_threshold',
  'dynatemp_range', 'dynatemp_exponent', 'repeat_last_n', 'repeat_penalty', 'frequency_penalty', 'presence_penalty',
  'dry_multiplier', 'dry_base', 'dry_allowed_length', 'dry_penalty_last_n', 'dry_sequence_breakers', 'mirostat',
  'mirostat_tau', 'mirostat_eta', 'adaptive_target', 'adaptive_decay', 'seed', 'min_keep', 'samplers', 'logit_bias',
  'ignore_eos', 'stop', 'grammar', 'grammar_lazy', 'grammar_triggers', 'preserved_tokens', 'json_schema',
  'n_probs', 'post_sampling_probs', 'cache_prompt', 'n_cache_reuse', 'n_keep', 'n_discard', 'n_indent',
  't_max_predict_ms', 'timings_per_token', 'return_tokens', 'return_progress', 'stream', 'stream_options',
  // The caller's own request echoed (its prompt and settings): how a client checks what sampling was used.
  'verbose',
  'max_tokens', 'max_completion_tokens', 'n',
]

/** What llama-server's chat formatting reads (tools/server/server-common.cpp). */
const CHAT = [
  'messages', 'tools', 'tool_choice', 'parallel_tool_calls', 'response_format', 'chat_template_kwargs',
  'reasoning_format', 'reasoning_effort', 'reasoning_budget_tokens', 'thinking_budget_tokens', 'parse_tool_calls',
  'add_generation_prompt', 'continue_final_message', 'logprobs', 'top_logprobs',
]

export const OPENAI_CHAT_FIELDS: ReadonlySet<string> = new Set(['model', ...SAMPLING, ...CHAT, 'user', 'metadata'])
export const OPENAI_COMPLETION_FIELDS: ReadonlySet<string> = new Set(['model', ...SAMPLING, 'prompt', 'echo', 'logprobs', 'user'])
export const ANTHROPIC_FIELDS: ReadonlySet<string> = new Set([
  'model', ...SAMPLING, ...CHAT, 'system', 'stop_sequences', 'thinking', 'metadata',
])

/** The most alternatives per token a request may ask for: OpenAI's own bound on `top_logprobs`. */
export const MAX_PROBS = 20

/** Each refused field, with why, when its value would change what the gateway accounts for. */
const REFUSED: Record<string, (value: unknown) => string | null> = {
  n_cmpl: (value) => value === 1 || value === null ? null : 'asks for several completions at once, each in a runtime slot of its own: llamagate gives a request one completion',
  id_slot: (value) => value === -1 || value === null ? null : 'picks a runtime slot: llamagate assigns the slots',
  lora: (value) => Array.isArray(value) && value.length === 0 ? null : 'changes the adapters of a model other clients share',
  n_probs: (value) => probs(value),
  top_logprobs: (value) => probs(value),
  // On text completions `logprobs` is a count (on chat a boolean).
  logprobs: (value) => typeof value === 'number' ? probs(value) : null,
  response_fields: () => 'filters the answer the gateway reads its usage from',
  // llama-server's own name for the answer's length would win over max_tokens, past the configured limits.
  n_predict: () => 'is llama-server\'s own name: send max_tokens (or options.num_predict)',
}

function probs (value: unknown): string | null {
  return typeof value === 'number' && value > MAX_PROBS ? `asks for ${value} alternatives per token: at most ${MAX_PROBS}` : null
}

/**
 * The fields of `body` to send to llama-server: those `allowed` for the surface, after the refusals.
 * @throws BadRequestError naming the first refused field and why
 */
export function runtimeFields (body: Record<string, unknown>, allowed: ReadonlySet<string>): Record<string, unknown> {
  const sent: Record<string, unknown> = {}
  for (const [name, value] of Object.entries(body)) {
    const refusal = Object.hasOwn(REFUSED, name) ? REFUSED[name]!(value) : null
    if (refusal !== null) throw new BadRequestError(`"${name}" is not accepted here: it ${refusal}`, 'unsupported_parameter')
    if (allowed.has(name)) sent[name] = value
  }
  return sent
}
