import type { ModelRecord } from '../storage/model-record.js'

/**
 * What a model can do, as Ollama's clients read it to offer tools, thinking or image upload: decided, as Ollama
 * decides it, from the model's kind, what its chat template renders, and what a projector beside it takes (images: `vision`, sound: `audio`).
 */
export function capabilities (record: ModelRecord): string[] {
  if (record.kind === 'embedding') return ['embedding']
  if (record.kind === 'reranker') return ['rerank']
  if (record.kind === 'decision') return ['decision']
  const template = chatTemplate(record)
  const found = ['completion']
  if (/\btools\b/.test(template)) found.push('tools')
  if (/<think>|reasoning_content|enable_thinking|\bthinking\b/.test(template)) found.push('thinking')
  if (record.projectorInputs.includes('image')) found.push('vision')
  if (record.projectorInputs.includes('audio')) found.push('audio')
  return found
}

/** The chat template a model is served with: its own from `/api/create`, else its GGUF's ('' when none). */
export function chatTemplate (record: ModelRecord): string {
  return record.template ?? record.gguf?.chat_template ?? ''
}
