/**
 * The model store as a plugin sees it (`app.store`): which models are stored, read only. The store itself
 * (plugins/storage) has more, for the built-ins; these records are its records, seen through what a plugin may rely on.
 */
export interface StoredModel {
  /** `<owner>/<name>`, in the case it was stored with. */
  readonly name: string
  /** Bytes of all its files and converted variants. */
  readonly size: number
  readonly format: 'gguf' | 'safetensors'
  /** What it is, from its GGUF's metadata. */
  readonly kind: 'chat' | 'embedding' | 'reranker' | 'decision'
  /** ISO 8601 UTC with milliseconds. */
  readonly modified_at: string
  /** SHA-256 of its manifest: changes whenever the model does. */
  readonly digest: string
}

/** `app.store`: the stored models. */
export interface StoredModels {
  /** Every stored model, most recently modified first. */
  list(): readonly StoredModel[]
  /**
   * The model of that name, case-insensitive (a `:tag` is ignored; an alias reaches its model), or null when none is
   * stored under it. @throws InvalidModelNameError
   */
  find(name: string): StoredModel | null
  /** The model of that name (or alias). @throws InvalidModelNameError, ModelNotFoundError */
  get(name: string): StoredModel
}
