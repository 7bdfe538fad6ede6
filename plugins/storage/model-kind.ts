import type { GgufInfo } from './manifest.js'

/**
 * What a model is, which decides how llama-server is started for it and which endpoints it serves: a chat
 * (generative) model, an embedding model (`--embeddings`), or a reranker (`--reranking`).
 */
export type ModelKind = 'chat' | 'embedding' | 'reranker'

// Architectures that embed rather than generate (llama.cpp's BERT family), whether or not the GGUF says how they pool.
const EMBEDDING_ARCHITECTURES = new Set(['bert', 'nomic-bert', 'nomic-bert-moe', 'jina-bert-v2', 'jina-bert-v3', 'modern-bert', 'neo-bert', 't5encoder'])
// llama.cpp's LLAMA_POOLING_TYPE_RANK: a classification head scores a (query, document) pair.
const POOLING_RANK = 4

/**
 * A model's kind from its GGUF metadata: rank pooling is a reranker; an encoder architecture, or any model that
 * names a pooling (decoder-based embedders such as Qwen3-Embedding pool the last token), is an embedding model;
 * anything else generates. Chat models' GGUFs name no pooling.
 */
export function modelKind (gguf: Pick<GgufInfo, 'architecture' | 'pooling_type'> | null | undefined): ModelKind {
  if (!gguf) return 'chat'
  if (gguf.pooling_type === POOLING_RANK) return 'reranker'
  if ((gguf.architecture !== null && EMBEDDING_ARCHITECTURES.has(gguf.architecture)) || (gguf.pooling_type ?? 0) > 0) return 'embedding'
  return 'chat'
}
