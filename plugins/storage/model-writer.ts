import type { Manifest, Variant } from './manifest.js'
import type { ModelRecord } from './model-record.js'

/** What a writer commits: the manifest less what the store fills in. */
export type ManifestInput = Omit<Manifest, 'version' | 'modified_at' | 'gguf' | 'variants' | 'projector_inputs'> & {
  /** The converted variants; left out, those of the committed model are kept while its files are unchanged. */
  variants?: Variant[]
}

/** Write access to one model, holding its cross-process lock. Always `release()` it (in a `finally`). */
export interface ModelWriter {
  /** The model folder (created). Write files here; the model is listed once `commit` has run. */
  readonly dir: string
  /** The committed manifest, if the model was whole before. */
  readonly existing: Manifest | null
  /**
   * Reads the metadata of the primary GGUF (or of the first variant), writes manifest.json atomically,
   * removes the files of the previous manifest that the new one no longer names, refreshes the cache.
   * @throws ConflictError when the lock was lost (another process took it over as stale)
   */
  commit(input: ManifestInput): Promise<ModelRecord>
  /** Unlocks and unmarks the model busy. Idempotent. */
  release(): Promise<void>
}

/** How `openWriter` treats a model another writer holds. */
export interface OpenWriterOptions {
  /** Wait for the other writer (of this or another process) instead of failing with 409. @default false */
  wait?: boolean
  /**
   * How long to wait; Infinity waits as long as the holder lives and keeps its lock fresh (a pull, whose
   * client can leave). @default the store's lockWaitMs
   */
  waitMs?: number
  /** Gives up the wait (a client that left): rejects with its reason, holding nothing. */
  signal?: AbortSignal
  /** Called once when the lock is found taken and the wait begins. */
  onWait?: () => void
}
