import type { ChatPiece, ChatShapes } from '../inference/parsed-chat-run.js'

/** The answer formats a transcription may ask for; `srt` and `vtt` need timestamps, which these models do not give. */
export type TranscriptionFormat = 'json' | 'text' | 'verbose_json'

/** What the answer says beside the text: the audio's language (as asked) and length. */
export interface TranscriptionFacts { format: TranscriptionFormat, language: string | null, duration: number | null }

/** OpenAI's transcription usage (`type: tokens`), from llama-server's chat usage. */
function usageOf (piece: ChatPiece) {
  const input = piece.usage?.prompt_tokens ?? 0
  const output = piece.usage?.completion_tokens ?? 0
  return { type: 'tokens' as const, input_tokens: input, output_tokens: output, total_tokens: input + output, input_tokens_details: { cached_tokens: piece.usage?.prompt_tokens_details?.cached_tokens ?? 0 } }
}

function textOf (piece: ChatPiece): string {
  const content = piece.choices?.[0]?.message?.content
  return typeof content === 'string' ? content : ''
}

/**
 * A transcription's answer in OpenAI's shapes, made from the chat llama-server answered: `json` `{text, usage}`,
 * `text` the text alone, `verbose_json` with the task, language and duration (no segments: the model gives no
 * timestamps); streamed, OpenAI's `transcript.text.delta` events and one `transcript.text.done` with the whole text
 * and the usage (no `[DONE]`: OpenAI's stream ends with the body).
 */
export function transcriptionShapes (facts: TranscriptionFacts): ChatShapes {
  let text = ''
  let last: ChatPiece = {}
  const event = (data: unknown): string => `data: ${JSON.stringify(data)}\n\n`
  return {
    whole (answer) {
      const said = textOf(answer)
      if (facts.format === 'text') return said
      if (facts.format === 'json') return { text: said, usage: usageOf(answer) }
      return { task: 'transcribe', language: facts.language ?? 'unknown', duration: facts.duration ?? 0, text: said, usage: usageOf(answer) }
    },
    chunk (chunk) {
      if (chunk.usage != null) last = chunk
      const delta = chunk.choices?.[0]?.delta?.content
      if (typeof delta !== 'string' || delta === '') return ''
      text += delta
      return event({ type: 'transcript.text.delta', delta })
    },
    end () {
      return event({ type: 'transcript.text.done', text, usage: usageOf(last) })
    },
  }
}
