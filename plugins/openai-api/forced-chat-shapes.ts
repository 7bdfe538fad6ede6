import type { ChatPiece, ChatShapes } from '../inference/parsed-chat-run.js'
import { chatAnswerToSpec } from './chat-spec-fields.js'

/**
 * OpenAI's chat completion (whole or streamed) of a forced call, from llama-server's chunks made into calls
 * (plugins/inference/forced-call.ts): chunks as the relay would pass them, with one `created`, the usage chunk only
 * when the request asked for it (`stream_options.include_usage`, the others then `usage: null`), and `[DONE]`.
 * A chunk whose text was only the call's framing (its name's key, a fence) and says nothing else is left out.
 */
export function forcedChatShapes (includeUsage: boolean): ChatShapes {
  let created: unknown = null
  return {
    whole: (answer) => chatAnswerToSpec(answer),
    chunk: (chunk: ChatPiece) => {
      const usageChunk = Array.isArray(chunk.choices) && chunk.choices.length === 0
      if (usageChunk && !includeUsage) return ''
      const choice = chunk.choices?.[0]
      if (choice !== undefined && !choice.finish_reason && Object.keys(choice.delta ?? {}).length === 0) return ''
      created ??= chunk.created
      const sent = { ...chunk, created }
      if (!usageChunk) {
        if (includeUsage) sent.usage = null
        else delete sent.usage
      }
      return `data: ${JSON.stringify(sent)}\n\n`
    },
    end: () => 'data: [DONE]\n\n',
  }
}
