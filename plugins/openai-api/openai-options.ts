/**
 * OpenAI's top-level fields that are options of the contract (they win over `options`), each with the option it
 * sets. max_completion_tokens is the newer name of max_tokens: listed last, it wins when both are sent.
 */
export const OPENAI_OPTIONS: Readonly<Record<string, string>> = {
  ...Object.fromEntries(['temperature', 'top_p', 'max_tokens', 'seed', 'stop', 'presence_penalty', 'frequency_penalty'].map((key) => [key, key])),
  max_completion_tokens: 'max_tokens',
}

/** llama-server ends chat and text completion streams with `[DONE]`. */
export const STREAM_DONE = Buffer.from('data: [DONE]\n\n')
