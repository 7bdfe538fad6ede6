import { GatewayError } from '../../core/base/errors.js'
import type { Lease } from '../leases/lease.js'

/**
 * Where a model's chat template lets a system message that comes after the conversation started go: `in-place`,
 * where it was sent; `as-user` where the template refuses one (Gemma's, Mistral's raise an exception), drops it, or
 * moves it to the front (DeepSeek-R1's renders the last system message first): the conversation's opening system
 * messages then join the system prompt and the later ones go in their place as user text
 * (chat-system-messages.ts). In place, every turn's prompt starts with the previous turn's; moved to the front, a
 * system message added late changes the prompt's first tokens and the runtime evaluates the whole conversation again.
 */
export type SystemPlacement = 'in-place' | 'as-user'

// Words no template writes: where each lands in the rendered prompt says where its message went.
const MARKS = ['llamagate-probe-opening', 'llamagate-probe-ask', 'llamagate-probe-answer', 'llamagate-probe-late', 'llamagate-probe-next'] as const
const PROBE = {
  messages: [
    { role: 'system', content: MARKS[0] },
    { role: 'user', content: MARKS[1] },
    { role: 'assistant', content: MARKS[2] },
    { role: 'system', content: MARKS[3] },
    { role: 'user', content: MARKS[4] },
  ],
}

// One answer per model file and template, asked of the runtime once: llama-server's /apply-template renders a
// chat exactly as its chat completions and Messages do (the same template, the same workarounds), without a slot.
const answers = new Map<string, Promise<SystemPlacement | null>>()
// Far more models than a server serves; past it the oldest answers go (they are asked again if needed).
const MAX_ANSWERS = 256

/**
 * How the lease's model takes a late system message, as its runtime renders a probe conversation (asked once per
 * model and template). A model an upstream serves is not asked (the upstream that answers may change from one request
 * to the next, and its server need not have /apply-template), nor a runtime that cannot say: `as-user`, which every
 * template renders.
 */
export async function systemPlacement (lease: Lease): Promise<SystemPlacement> {
  const { model } = lease
  if (model.format === 'remote') return 'as-user'
  const key = `${model.name}\0${model.digest ?? ''}\0${model.template ?? ''}`
  let answer = answers.get(key)
  if (answer === undefined) {
    answer = probe(lease)
    answers.set(key, answer)
    if (answers.size > MAX_ANSWERS) answers.delete(answers.keys().next().value!)
  }
  const placement = await answer
  if (placement !== null) return placement
  // Not an answer (the request was cancelled, the connection broke): asked again by the next request.
  if (answers.get(key) === answer) answers.delete(key)
  return 'as-user'
}

async function probe (lease: Lease): Promise<SystemPlacement | null> {
  try {
    const { prompt } = await lease.endpoint.postJson<{ prompt?: unknown }>('/apply-template', PROBE, lease.signal)
    if (typeof prompt !== 'string') return 'as-user'
    const at = MARKS.map((mark) => prompt.indexOf(mark))
    return at[2]! >= 0 && at[3]! > at[2]! && at[4]! > at[3]! ? 'in-place' : 'as-user'
  } catch (err) {
    // The runtime's answer (a template that raises: a 500 naming the exception) is an answer; anything else (the
    // request cancelled, the runtime gone) says nothing about the template.
    return err instanceof GatewayError && !lease.signal.aborted ? 'as-user' : null
  }
}
