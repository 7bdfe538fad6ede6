import type { GgufInfo } from './manifest.js'

/**
 * What a model is, which decides how llama-server is started for it and which endpoints it serves: a chat
 * (generative) model, an embedding model (`--embeddings`), a reranker (`--reranking`), or a decision model (a causal
 * model whose answers are read from the logits of its labels: started as a chat model, served only /v1/systemone and
 * /v1/decisions).
 */
export type ModelKind = 'chat' | 'embedding' | 'reranker' | 'decision'

// Architectures that embed rather than generate (llama.cpp's BERT family), whether or not the GGUF says how they pool.
const EMBEDDING_ARCHITECTURES = new Set(['bert', 'nomic-bert', 'nomic-bert-moe', 'jina-bert-v2', 'jina-bert-v3', 'modern-bert', 'neo-bert', 't5encoder'])
// llama.cpp's LLAMA_POOLING_TYPE_RANK: a classification head scores a (query, document) pair.
const POOLING_RANK = 4

/**
 * A model's kind from its GGUF metadata: rank pooling is a reranker; an encoder architecture, or any model that
 * names a pooling (decoder-based embedders such as Qwen3-Embedding pool the last token), is an embedding model;
 * a decision type makes a decision model; anything else generates. Chat models' GGUFs name no pooling.
 */
export function modelKind (gguf: Pick<GgufInfo, 'architecture' | 'pooling_type' | 'decision'> | null | undefined): ModelKind {
  if (!gguf) return 'chat'
  if (gguf.decision != null) return 'decision'
  if (gguf.pooling_type === POOLING_RANK) return 'reranker'
  if ((gguf.architecture !== null && EMBEDDING_ARCHITECTURES.has(gguf.architecture)) || (gguf.pooling_type ?? 0) > 0) return 'embedding'
  return 'chat'
}
