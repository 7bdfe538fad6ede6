import type { ModelRecord } from '../storage/model-record.js'

/**
 * The system prompt a model was created with (`/api/create`) goes first when the conversation brings none of
 * its own, as in Ollama.
 */
export function withModelSystem<T extends { role?: string }> (record: ModelRecord, messages: T[]): Array<T | { role: 'system', content: string }> {
  if (record.system === null || messages[0]?.role === 'system') return messages
  return [{ role: 'system', content: record.system }, ...messages]
}
