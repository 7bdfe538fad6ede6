import { randomBytes } from 'node:crypto'
import { ForcedCallDecoder, type CallDelta } from './forced-call-decoder.js'
import type { ForcedCall } from './forced-call-schema.js'

/** A tool call in a chat chunk's delta, as OpenAI streams one: id, type and name first, then its arguments. */
export interface ChatToolCallDelta {
  index: number
  id?: string
  type?: 'function'
  function?: { name?: string, arguments?: string }
}

type Json = Record<string, unknown>

/** One of llama-server's chat chunks or whole answers, as far as a forced call changes it. */
export interface ForcedChatPiece {
  choices?: Array<Json & { delta?: Json, message?: Json, finish_reason?: string | null }>
}

/** An id for a call in OpenAI's form (`call_` and 24 letters and digits), as the SDKs and agents expect them. */
export function callId (prefix = 'call_'): string {
  return prefix + randomBytes(18).toString('base64url').replace(/[-_]/g, '0')
}

/**
 * The chat chunks of an answer held to forced-call-schema.ts's schema, made into the chunks of the calls it holds:
 * each chunk's text becomes the calls' deltas (an id, the name, then the arguments as they come), and the finish
 * of a call whole is `tool_calls`. Reasoning and everything else in a chunk pass as they are. What a surface writes
 * (OpenAI's chunks, the Responses events, Anthropic's blocks) is then made as for a call the model chose.
 */
export async function * forcedChunks<T extends ForcedChatPiece> (chunks: AsyncIterable<T>, forced: ForcedCall, idPrefix?: string): AsyncGenerator<T> {
  const decoder = new ForcedCallDecoder(forced.parallel)
  const ids: string[] = []
  for await (const chunk of chunks) {
    const choice = chunk.choices?.[0]
    const delta = choice?.delta
    if (delta !== undefined && typeof delta.content === 'string') {
      const { content, ...rest } = delta
      const calls = decoder.push(content as string).map((piece) => chatDelta(piece, ids, idPrefix))
      choice!.delta = calls.length > 0 ? { ...rest, tool_calls: calls } : rest
    }
    if (choice?.finish_reason === 'stop' && decoder.calls.length > 0) choice.finish_reason = 'tool_calls'
    yield chunk
  }
}

/** A whole chat answer held to the schema, made into the answer with its calls (content null, as a call's is). */
export function forcedAnswer<T extends ForcedChatPiece> (answer: T, forced: ForcedCall, idPrefix?: string): T {
  const choice = answer.choices?.[0]
  const message = choice?.message
  if (choice === undefined || message === undefined) return answer
  const decoder = new ForcedCallDecoder(forced.parallel)
  decoder.push(typeof message.content === 'string' ? message.content : '')
  const calls = decoder.calls.map((call) => ({ id: callId(idPrefix), type: 'function' as const, function: { name: call.name, arguments: call.arguments } }))
  choice.message = { ...message, content: null, ...(calls.length > 0 ? { tool_calls: calls } : {}) }
  if (choice.finish_reason === 'stop' && calls.length > 0) choice.finish_reason = 'tool_calls'
  return answer
}

function chatDelta (piece: CallDelta, ids: string[], idPrefix?: string): ChatToolCallDelta {
  if (piece.name === undefined) return { index: piece.index, function: { arguments: piece.arguments ?? '' } }
  ids[piece.index] = callId(idPrefix)
  return { index: piece.index, id: ids[piece.index], type: 'function', function: { name: piece.name, arguments: piece.arguments ?? '' } }
}
