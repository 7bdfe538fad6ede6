import { audioDuration, audioFormat } from '../../core/base/audio-header.js'

/**
 * Bytes of a request's text counted as one token. A byte-level BPE vocabulary makes ~4 of English prose a token, ~3
 * of code or JSON, fewer of some scripts; 3 errs on the side of reserving more than the prompt takes.
 */
export const BYTES_PER_TOKEN = 3
/** A chat template's markers around one message (its role, its start and end). */
export const TOKENS_PER_MESSAGE = 4
/**
 * What a template adds to every prompt besides its messages: its opening, a default system prompt (Qwen's "You are
 * a helpful assistant", Llama 3's knowledge dates: 10-25 tokens), the assistant's turn it ends with.
 */
export const TOKENS_PER_REQUEST = 32
/** What one image is reserved at: a vision projector's tokens for a picture run from ~64 to a few thousand. */
export const TOKENS_PER_IMAGE = 1024
/**
 * What 30 seconds of audio are reserved at, a part of it counted whole: Qwen2-Audio's 750 positions a window, the
 * most of the common audio projectors (Ultravox takes 188, Voxtral 375).
 */
export const TOKENS_PER_AUDIO_WINDOW = 750
const AUDIO_WINDOW_SECONDS = 30
/** A file's length when its header does not say: 16-bit mono at 16 kHz, what transcription clients send most. */
const AUDIO_BYTES_PER_SECOND = 32_000
const DATA_URL = /^data:image\//
const BASE64_URL = /^data:[^,]*;base64,/i
/** Fields that name things rather than say them: not prompt text. */
const NOT_TEXT = new Set(['model', 'role', 'type', 'id', 'tool_call_id', 'stream', 'keep_alive', 'previous_response_id'])
/** Fields that may hold token ids: a text completion's or an embedding's prompt, Ollama's `context`. */
const TOKEN_LISTS = new Set(['prompt', 'input', 'context'])
/** Fields whose whole value a template renders as JSON text (tool definitions, output schemas). */
const AS_JSON = new Set(['tools', 'functions', 'format', 'response_format', 'text'])

/**
 * About how many tokens a request's prompt is, before any runtime has read it: the text it carries (messages,
 * system prompts, a raw prompt) at BYTES_PER_TOKEN, tools and schemas as the JSON a template renders them as,
 * TOKENS_PER_REQUEST for the template, TOKENS_PER_MESSAGE per message, TOKENS_PER_IMAGE per image (Ollama's
 * `images`, a data: URL, Anthropic's base64 source), TOKENS_PER_AUDIO_WINDOW per 30 s of audio (an `input_audio` part,
 * a sound among Ollama's `images`, a transcription's file) and one per token id given as such. What a daily token limit reserves at the door; the runtime's own count replaces it when the answer says
 * it (plugins/usage), and a request cut short is booked with this figure.
 */
export function promptEstimate (body: unknown): number {
  let bytes = 0
  let images = 0
  let messages = 0
  let ids = 0
  let audio = 0
  // Iterative: a body is as deep as the parser allowed (core/base/json-depth.ts); no recursion is needed. Each value goes
  // with what it is where it stands: an image, or token ids (numbers elsewhere are settings, not text).
  const stack: Array<{ value: unknown, image: boolean, tokens: boolean }> = [{ value: body, image: false, tokens: false }]
  while (stack.length > 0) {
    const { value, image, tokens } = stack.pop()!
    if (typeof value === 'string') {
      // Ollama takes sound among a message's images too.
      const sound = image ? audioWindows(Buffer.from(value.replace(BASE64_URL, '').slice(0, 64), 'base64'), value) : 0
      if (sound > 0) audio += sound
      else if (image || DATA_URL.test(value)) images++
      else bytes += Buffer.byteLength(value)
    } else if (Buffer.isBuffer(value)) {
      // A transcription's uploaded file.
      audio += audioWindows(value, null)
    } else if (typeof value === 'number') {
      if (tokens) ids++
    } else if (Array.isArray(value)) {
      for (const item of value) stack.push({ value: item, image, tokens })
    } else if (typeof value === 'object' && value !== null) {
      if ('role' in value) messages++
      if ((value as { type?: unknown }).type === 'input_audio') {
        const data = ((value as { input_audio?: { data?: unknown } }).input_audio ?? {}).data
        if (typeof data === 'string') audio += Math.max(1, audioWindows(Buffer.from(data.replace(BASE64_URL, '').slice(0, 64), 'base64'), data))
        continue
      }
      const base64 = (value as { type?: unknown }).type === 'base64'
      for (const [key, item] of Object.entries(value)) {
        if (NOT_TEXT.has(key)) continue
        if (AS_JSON.has(key) && typeof item === 'object' && item !== null) { bytes += JSON.stringify(item).length; continue }
        stack.push({ value: item, image: key === 'images' || (base64 && key === 'data'), tokens: TOKEN_LISTS.has(key) })
      }
    }
  }
  return TOKENS_PER_REQUEST + ids + Math.ceil(bytes / BYTES_PER_TOKEN) + messages * TOKENS_PER_MESSAGE + images * TOKENS_PER_IMAGE + audio * TOKENS_PER_AUDIO_WINDOW
}

/**
 * The 30-second windows audio takes (0: these bytes are no audio). `head`: its first bytes, decoded; `base64`: the
 * whole as sent (null: `head` is all of it), decoded only when its header is audio's.
 */
function audioWindows (head: Buffer, base64: string | null): number {
  const format = audioFormat(head)
  if (format === null) return 0
  const bytes = base64 === null ? head : Buffer.from(base64.replace(BASE64_URL, ''), 'base64')
  const seconds = audioDuration(bytes, format) ?? bytes.length / AUDIO_BYTES_PER_SECOND
  return Math.max(1, Math.ceil(seconds / AUDIO_WINDOW_SECONDS))
}
