import { Type } from 'typebox'

/** GET /api/usage?key=NAME (another key's, with the admin scope) or ?all=true (every key's). */
export const UsageQuery = Type.Object({
  key: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'the key whose usage to show (admin scope, unless it is the caller\'s own)' })),
  // A query string is text: the values spelled out, as no type is coerced here.
  all: Type.Optional(Type.Union([Type.Literal('true'), Type.Literal('false')], { description: 'every key\'s usage (admin scope)' })),
}, { additionalProperties: false })

// Milliseconds are whole: the sums are kept with their fractions, shown rounded.
const TOTALS = {
  requests: Type.Integer(),
  /** The whole prompts, cached tokens included, as the answers reported them. */
  prompt_tokens: Type.Integer(),
  /** Of the prompt tokens, those the runtime took from its cache. */
  cached_tokens: Type.Integer(),
  generated_tokens: Type.Integer(),
  /** Waiting for a load and a slot. */
  queue_ms: Type.Integer(),
  /** Holding a slot on a runtime. */
  runtime_ms: Type.Integer(),
}

export const UsageTotalsReply = Type.Object(TOTALS)

const KeyLimits = Type.Object({
  concurrent: Type.Optional(Type.Integer()),
  requests_per_minute: Type.Optional(Type.Integer()),
  tokens_per_day: Type.Optional(Type.Integer()),
  queue_share: Type.Optional(Type.Number()),
})

export const KeyUsage = Type.Object({
  /** The key's name; `anonymous` when keys are off. */
  key: Type.String(),
  /**
   * Prompt plus generated tokens of the requests finished today (UTC), and those its running requests hold reserved
   * (their prompts and the most they may generate): together, the figure `limits.tokens_per_day` caps.
   */
  today: Type.Object({ date: Type.String(), tokens: Type.Integer(), reserved: Type.Integer() }),
  /** The key's limits from the keys file (`{}`: none); null where they are not known here (another key's). */
  limits: Type.Union([KeyLimits, Type.Null()]),
  models: Type.Array(Type.Object({ model: Type.String(), ...TOTALS })),
  /** The sums over its models. */
  totals: UsageTotalsReply,
})

export const UsageReply = Type.Object({ keys: Type.Array(KeyUsage) })
