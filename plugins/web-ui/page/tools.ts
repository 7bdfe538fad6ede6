/** Tool definitions typed into the page, checked before they are sent; and a sample to start from. */

export type ParsedTools = { tools: unknown[] } | { error: string }

/**
 * The person's JSON: an array of `{type: "function", function: {name, description?, parameters?}}`, Ollama's and
 * OpenAI's shape. Empty text means no tools. The server checks them again; this catches typing mistakes before a
 * question is sent, with the place of the mistake.
 */
export function parseTools (text: string): ParsedTools {
  if (text.trim() === '') return { tools: [] }
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (err) {
    return { error: `Tools are not valid JSON: ${err instanceof Error ? err.message : String(err)}` }
  }
  if (!Array.isArray(value)) return { error: 'Tools must be a JSON array of tool definitions.' }
  for (const [i, tool] of value.entries()) {
    const fn = (tool as { function?: { name?: unknown } } | null)?.function
    if (typeof tool !== 'object' || tool === null || typeof fn !== 'object' || fn === null) {
      return { error: `Tool ${i + 1} needs a "function" object: {"type": "function", "function": {"name": ...}}.` }
    }
    if (typeof fn.name !== 'string' || fn.name.trim() === '') return { error: `Tool ${i + 1} needs a function name.` }
  }
  return { tools: value.map((tool: object) => ({ type: 'function', ...tool })) }
}

export const SAMPLE_TOOLS = JSON.stringify([{
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'The current weather in a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
}], null, 2)
