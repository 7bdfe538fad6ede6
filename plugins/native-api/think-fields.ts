import { BadRequestError } from '../../core/base/errors.js'
import { capabilities, chatTemplate } from '../inference/model-capabilities.js'
import type { ModelRecord } from '../storage/model-record.js'

/** Ollama's `think`: on, off, or an effort. */
export type Think = boolean | 'low' | 'medium' | 'high' | 'max'

/**
 * Ollama's `think` as llama-server's request fields, as Ollama sends them to it: off is `reasoning_effort: "none"`
 * (the template renders no reasoning, and none is parsed); on is the template's `enable_thinking`; an effort is on,
 * and goes to the template as `reasoning_effort` (gpt-oss's, DeepSeek V4's read it; one that does not still
 * thinks). Unset leaves the model's default. Reasoning comes back apart from the answer either way.
 */
export function thinkFields (record: ModelRecord, think: Think | undefined): Record<string, unknown> {
  if (think === false) return { reasoning_effort: 'none' }
  if (think === undefined) return {}
  // As Ollama: asking a model that cannot think to think is the client's mistake, not a silent no-op.
  if (!capabilities(record).includes('thinking')) throw new BadRequestError(`"${record.name}" does not support thinking`, 'thinking_not_supported')
  const on = { chat_template_kwargs: { enable_thinking: true } }
  return think === true ? on : { ...on, reasoning_effort: templateEffort(record, think) }
}

/** An effort word as the model's template takes it: harmony (gpt-oss) knows low, medium and high, so max is high there, as in Ollama. */
export function templateEffort (record: ModelRecord, effort: Exclude<Think, boolean>): string {
  return effort === 'max' && isHarmony(chatTemplate(record)) ? 'high' : effort
}

function isHarmony (template: string): boolean {
  return template.includes('<|channel|>') && template.includes('reasoning_effort')
}
