import type { CallRequest } from '../../core/platform/call-hooks.js'

/**
 * A decision's state as the call hooks see it: text as `prompt`, a conversation (chat messages) as `messages`, as
 * they see a generate's prompt and a chat's messages; anything else (a structured state) as `prompt`, as it came.
 */
export function stateForHooks (state: unknown): { messages: Array<Record<string, unknown>> } | { prompt: unknown } {
  return Array.isArray(state) && state.every((m) => typeof m === 'object' && m !== null && !Array.isArray(m))
    ? { messages: state as Array<Record<string, unknown>> }
    : { prompt: state }
}

/** The state once the `before` hooks left the call: what they put in `messages` or `prompt`, where it was. */
export function stateFromHooks (call: CallRequest, state: unknown): unknown {
  return 'messages' in stateForHooks(state) ? call.messages : call.prompt
}
