import { priorityOfServiceTier, priorityOfVllm, type Priority } from '../../core/base/priority.js'

/**
 * The priority class a request's body asks for, as received: OpenAI's `service_tier` (`flex`, `priority`), else vLLM's
 * `priority` (an integer, lower first). Anthropic's `service_tier` (`auto`, `standard_only`) and Ollama's bodies ask
 * none: their requests run at their key's class.
 */
export function askedPriority (body: unknown): Priority | undefined {
  if (typeof body !== 'object' || body === null) return undefined
  const { service_tier: tier, priority } = body as { service_tier?: unknown, priority?: unknown }
  return priorityOfServiceTier(tier) ?? priorityOfVllm(priority)
}
