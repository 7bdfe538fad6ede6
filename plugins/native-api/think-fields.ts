import { BadRequestError } from '../../core/errors.js'
import { capabilities } from '../inference/model-capabilities.js'
import type { ModelRecord } from '../storage/model-record.js'

/**
 * Ollama's `think` as llama-server's request fields: off is `reasoning_effort: "none"` (the template renders
 * no reasoning, and none is parsed), an effort word goes to the template as is, on (or unset) leaves the
 * model's default. Reasoning comes back apart from the answer either way (`reasoning_content`).
 */
export function thinkFields (record: ModelRecord, think: boolean | 'low' | 'medium' | 'high' | undefined): Record<string, unknown> {
  if (think === false) return { reasoning_effort: 'none' }
  // As Ollama: asking a model that cannot think to think is the client's mistake, not a silent no-op.
  if (think !== undefined && !capabilities(record).includes('thinking')) throw new BadRequestError(`"${record.name}" does not support thinking`, 'thinking_not_supported')
  if (typeof think === 'string') return { reasoning_effort: think }
  return {}
}
