import { tokenCount } from '../../../runtimes/index.js'
import type { Detour, UpstreamCalls } from './detour.js'

type Body = Record<string, unknown>

/**
 * Whether an embeddings request can be asked at Ollama's own embedding paths (a llamagate has them too): texts only,
 * since they take no token ids.
 */
export function isTextEmbedding (body: Body): boolean {
  return Array.isArray(body.input) && body.input.every((input) => typeof input === 'string')
}

/**
 * llama-server's `/v1/embeddings` (texts, `embd_normalize` 2 or -1) at Ollama's (or a llamagate's) own paths:
 * normalized vectors from `/api/embed`, which also honours `truncate` and counts the tokens; raw ones (the legacy
 * `/api/embeddings` asks for them) from `/api/embeddings`, one text a request, as that path takes them. Answered in
 * llama-server's shape: `data[].embedding` by `index`, `usage.prompt_tokens` where the upstream counted them.
 */
export function embeddingsViaNative (calls: UpstreamCalls, body: Body, signal: AbortSignal): Detour {
  const texts = body.input as string[]
  const whole = async (): Promise<Body> => {
    if (body.embd_normalize === -1) {
      const vectors = await Promise.all(texts.map(async (prompt) =>
        (await calls.json('/api/embeddings', { model: body.model, prompt }, signal) as { embedding?: number[] }).embedding ?? []))
      return { data: vectors.map((embedding, index) => ({ index, embedding })) }
    }
    const answer = await calls.json('/api/embed', { model: body.model, input: texts, ...(typeof body.truncate === 'boolean' ? { truncate: body.truncate } : {}) }, signal) as { embeddings?: number[][], prompt_eval_count?: number }
    const tokens = tokenCount(answer.prompt_eval_count, 'prompt_eval_count')
    return { data: (answer.embeddings ?? []).map((embedding, index) => ({ index, embedding })), ...(tokens !== null ? { usage: { prompt_tokens: tokens } } : {}) }
  }
  return { whole }
}
