/**
 * What a caller decides about a llama-server: the model and how to serve it. Where it listens, which build runs
 * it and how long its start may take are the launcher's (see `LlamaServerOptions`).
 */
export interface RuntimeSpawnOptions {
  modelPath: string
  /** The name llama-server answers with in `model` fields (`--alias`). */
  alias: string
  /** Total context: num_ctx × num_parallel (llama-server splits it between the slots). */
  ctxSize: number
  /** Slots, i.e. requests served at once. */
  parallel: number
  /** @default unset: llama-server's own default (all layers on the GPU where one is used) */
  nGpuLayers?: number
  /** CPU threads for generation (`--threads`). @default unset: llama-server chooses (its physical cores) */
  threads?: number
  /** @default unset: llama-server's default (f16) */
  cacheTypeK?: string
  /** @default unset: llama-server's default (f16) */
  cacheTypeV?: string
  /** A Jinja chat template instead of the GGUF's (`--chat-template`). @default the GGUF's */
  chatTemplate?: string
  /** Serve embeddings (`--embeddings`), pooled as the GGUF says unless `pooling` is given. @default false */
  embeddings?: boolean
  /** How tokens are pooled into one vector (`--pooling`): `last` for a chat model asked for embeddings. @default the GGUF's */
  pooling?: 'mean' | 'cls' | 'last'
  /** Serve reranking (`--reranking`). @default false */
  reranking?: boolean
  /** `--batch-size` and `--ubatch-size` both: an embedding input must fit in one physical batch. @default llama-server's */
  batchSize?: number
  /** A vision projector GGUF (`--mmproj`). @default none */
  projectorPath?: string
  /** RPC workers (`host:port`) the model's layers are split across (`--rpc`). @default none */
  rpcEndpoints?: string[]
  /** Each device's share of the layers (`--tensor-split`), RPC workers first. @default llama-server's (by free memory) */
  tensorSplit?: number[]
  /** A folder slots' caches are saved to and restored from (`--slot-save-path`). @default none: no slot saving */
  slotSavePath?: string
  /** Appended to the command line as is: the admin's own (config.yaml's models.<name>.args, model files resolved). @default [] */
  extraArgs?: string[]
}
