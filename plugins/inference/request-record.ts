import type { ModelRecord } from '../storage/model-record.js'

/** Where a request's model may be: stored here, else offered by one of config.yaml's upstreams. */
export interface RecordSources {
  store: { get(name: string): ModelRecord, lookup(name: string): ModelRecord | null }
  upstreams: { find(name: string): { name: string, upstream: { name: string } } | null }
}

/**
 * The record a surface reads a request's model by (its system prompt, template, projector). An upstream's model
 * has nothing here: its record is empty, so the surface adds nothing of its own and the upstream applies its own.
 * @throws the store's InvalidModelNameError or ModelNotFoundError when no upstream offers the name either
 */
export function requestRecord ({ store, upstreams }: RecordSources, name: string): ModelRecord {
  const stored = store.lookup(name)
  if (stored !== null) return stored
  const found = upstreams.find(name)
  // Neither here nor upstream: the store says why (not a model name, or no such model).
  return found === null ? store.get(name) : remoteRecord(found.name, found.upstream.name)
}

function remoteRecord (name: string, upstream: string): ModelRecord {
  const modified = new Date(0).toISOString()
  // No projector here: images go to the upstream as they came, and it says whether its model reads them.
  const manifest = { version: 1 as const, name, format: 'gguf' as const, source: { type: 'import' as const }, files: [], primary: null, variants: [], projector: null, gguf: null, modified_at: modified }
  return { id: name, name, size: 0, format: 'gguf', modified_at: modified, digest: '', dir: '', files: [], variants: [], gguf: null, kind: 'chat', projector: null, projectorInputs: [], system: null, parameters: null, template: null, manifest, upstream }
}
