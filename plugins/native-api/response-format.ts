/** Ollama's `format` ("json" or a JSON schema) as an OpenAI `response_format` for llama-server. */
export function responseFormat (format: unknown): Record<string, unknown> | undefined {
  if (format === undefined || format === null || format === '') return undefined
  if (format === 'json') return { type: 'json_object' }
  return { type: 'json_schema', json_schema: { name: 'format', schema: format } }
}
