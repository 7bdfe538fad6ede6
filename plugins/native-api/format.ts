import { BadRequestError } from '../../core/errors.js'
import { capabilities } from '../storage/capabilities.js'
import type { ModelRecord } from '../storage/model-store.js'

/** Ollama's `format` ("json" or a JSON schema) as an OpenAI `response_format` for llama-server. */
export function responseFormat (format: unknown): Record<string, unknown> | undefined {
  if (format === undefined || format === null || format === '') return undefined
  if (format === 'json') return { type: 'json_object' }
  return { type: 'json_schema', json_schema: { name: 'format', schema: format } }
}

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

/**
 * Images need a vision projector (mmproj) beside the model, which no model has yet (pulls do not fetch
 * one): a request that carries images is refused, never answered as if they were not there.
 */
export function refuseImages (model: string, images: Array<string[] | undefined>): void {
  if (images.some((list) => list !== undefined && list.length > 0)) {
    throw new BadRequestError(`model "${model}" cannot read images: it has no vision projector (mmproj); send text only`, 'images_not_supported')
  }
}

