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
const DATA_URL = /^data:image\//
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
 * `images`, a data: URL, Anthropic's base64 source) and one per token id given as such. What a daily token limit reserves at the door; the runtime's own count replaces it when the answer says
 * it (plugins/usage), and a request cut short is booked with this figure.
 */
export function promptEstimate (body: unknown): number {
  let bytes = 0
  let images = 0
  let messages = 0
  let ids = 0
  // Iterative: a body is as deep as the parser allowed (core/json-depth.ts); no recursion is needed. Each value goes
  // with what it is where it stands: an image, or token ids (numbers elsewhere are settings, not text).
  const stack: Array<{ value: unknown, image: boolean, tokens: boolean }> = [{ value: body, image: false, tokens: false }]
  while (stack.length > 0) {
    const { value, image, tokens } = stack.pop()!
    if (typeof value === 'string') {
      if (image || DATA_URL.test(value)) images++
      else bytes += Buffer.byteLength(value)
    } else if (typeof value === 'number') {
      if (tokens) ids++
    } else if (Array.isArray(value)) {
      for (const item of value) stack.push({ value: item, image, tokens })
    } else if (typeof value === 'object' && value !== null) {
      if ('role' in value) messages++
      const base64 = (value as { type?: unknown }).type === 'base64'
      for (const [key, item] of Object.entries(value)) {
        if (NOT_TEXT.has(key)) continue
        if (AS_JSON.has(key) && typeof item === 'object' && item !== null) { bytes += JSON.stringify(item).length; continue }
        stack.push({ value: item, image: key === 'images' || (base64 && key === 'data'), tokens: TOKEN_LISTS.has(key) })
      }
    }
  }
  return TOKENS_PER_REQUEST + ids + Math.ceil(bytes / BYTES_PER_TOKEN) + messages * TOKENS_PER_MESSAGE + images * TOKENS_PER_IMAGE
}
