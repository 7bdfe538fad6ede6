import type { ModelRecord } from './model-store.js'

// Architectures that embed rather than generate (llama.cpp's BERT family).
const EMBEDDING_ARCHITECTURES = new Set(['bert', 'nomic-bert', 'nomic-bert-moe', 'jina-bert-v2', 'jina-bert-v3', 'modern-bert', 'neo-bert', 't5encoder'])
/**
 * What a model can do, as Ollama's clients read it to offer tools, thinking or image upload: decided, as Ollama
 * decides it, from what the model's chat template renders.
 */
export function capabilities (record: ModelRecord): string[] {
  if (record.gguf?.architecture && EMBEDDING_ARCHITECTURES.has(record.gguf.architecture)) return ['embedding']
  const template = chatTemplate(record)
  const found = ['completion']
  if (/\btools\b/.test(template)) found.push('tools')
  if (/<think>|reasoning_content|enable_thinking|\bthinking\b/.test(template)) found.push('thinking')
  return found
}

/** The chat template a model is served with: its own from `/api/create`, else its GGUF's ('' when none). */
export function chatTemplate (record: ModelRecord): string {
  return record.template ?? record.gguf?.chat_template ?? ''
}
