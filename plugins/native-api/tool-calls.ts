import { toolCallIndex } from '../../runtimes/index.js'

/** A piece of a tool call as llama-server streams it (OpenAI's delta shape). */
export interface ToolCallDelta { index?: number, id?: string, function?: { name?: string, arguments?: string } }
/** A call put together from its pieces; `arguments` still the model's text. */
export interface ToolCall { id?: string, name: string, arguments: string }

/**
 * Tool-call fragments arrive in pieces; Ollama clients expect whole calls with parsed arguments.
 * @throws an error of the answer for a call numbered past the few an answer may make (toolCallIndex)
 */
export function collectToolCalls (calls: ToolCall[], deltas: ToolCallDelta[] | undefined): void {
  for (const delta of deltas ?? []) {
    const at = toolCallIndex(delta.index, calls.length)
    const call = calls[at] ?? (calls[at] = { name: '', arguments: '' })
    if (delta.id) call.id = delta.id
    if (delta.function?.name) call.name += delta.function.name
    if (delta.function?.arguments) call.arguments += delta.function.arguments
  }
}

/** Ollama's shape: whole calls, arguments as an object (the model's text when it is not JSON). */
export function ollamaToolCalls (calls: ToolCall[]): unknown[] {
  // Numbers the runtime skipped leave holes: only the calls it made are told.
  return calls.filter((c) => c !== undefined).map((c, index) => {
    let args: unknown = c.arguments
    try { args = c.arguments === '' ? {} : JSON.parse(c.arguments) } catch { /* keep the text the model wrote */ }
    return { ...(c.id ? { id: c.id } : {}), function: { index, name: c.name, arguments: args } }
  })
}
