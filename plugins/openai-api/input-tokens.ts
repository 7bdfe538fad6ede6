import type { FastifyReply, FastifyRequest } from 'fastify'
import { placeSystemMessages } from '../inference/chat-system-messages.js'
import { systemPlacement } from '../inference/system-placement.js'
import { runWhole } from '../inference/whole-run.js'
import type { Lease, LeaseSource } from '../leases/lease.js'

/** A chat as its template renders it: the messages and the tools, as chat completions take them. */
export interface CountedChat { messages: Array<Record<string, unknown>>, tools?: unknown[] | null }

/**
 * How many tokens a chat's input is on its model: rendered by the model's own runtime with its chat template
 * (`/apply-template`: the tools, the system messages placed as for a request) and tokenized as a request is (special
 * tokens added and parsed). An image part counts as the runtime's marker for it, not as the image's tokens.
 */
export async function countInputTokens (leases: LeaseSource, request: FastifyRequest, reply: FastifyReply, model: string, chat: CountedChat, keepAlive?: unknown): Promise<number> {
  return runWhole(leases, request, reply, { model, keep_alive: keepAlive }, 'generate', async (lease: Lease) => {
    const messages = placeSystemMessages(chat.messages as Array<{ role?: string }>, await systemPlacement(lease))
    const { prompt } = await lease.endpoint.postJson<{ prompt?: unknown }>('/apply-template', { messages, ...(chat.tools?.length ? { tools: chat.tools } : {}) }, lease.signal)
    if (typeof prompt !== 'string') throw new Error('the model\'s runtime rendered no prompt (/apply-template)')
    const { tokens } = await lease.endpoint.postJson<{ tokens?: unknown }>('/tokenize', { content: prompt, add_special: true, parse_special: true }, lease.signal)
    if (!Array.isArray(tokens)) throw new Error('the model\'s runtime answered /tokenize without a list of tokens')
    return tokens.length
  })
}
