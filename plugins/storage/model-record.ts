import type { GgufInfo, Manifest, ManifestFile, Variant } from './manifest.js'
import type { ProjectorInput } from './projector-inputs.js'
import { modelKind, type ModelKind } from './model-kind.js'

/** A whole model as the gateway knows it: its manifest and what follows from it (the surfaces shape it for their clients). */
export interface ModelRecord {
  /** `<owner>/<name>`, in the case it was stored with (the same as `name`). */
  id: string
  name: string
  /** Bytes of all its files and converted variants. */
  size: number
  format: 'gguf' | 'safetensors'
  /** ISO 8601 UTC with milliseconds. */
  modified_at: string
  /** SHA-256 of the manifest: changes whenever the model does. */
  digest: string
  /** The model's folder. */
  dir: string
  files: ManifestFile[]
  variants: Variant[]
  /** Shape and metadata of its GGUF (for SafeTensors models: of its first variant), for /api/show and KV-cache estimates. */
  gguf: GgufInfo | null
  /** What it is (chat, embedding, reranker), from its GGUF's metadata. */
  kind: ModelKind
  /** Its vision projector's file name (an `mmproj` GGUF in its folder), or null. */
  projector: string | null
  /** What its projector lets it take beside text (none without one). */
  projectorInputs: ProjectorInput[]
  /** The system prompt it was created with (`/api/create`), if any. */
  system: string | null
  /** Default options it was created with (`/api/create`), if any. */
  parameters: Record<string, unknown> | null
  /** The chat template it was created with (`/api/create`), used instead of the GGUF's; null: the GGUF's. */
  template: string | null
  manifest: Manifest
  /** Set on the empty record of an upstream's model (plugins/inference/request-record.ts): the upstream's name. Nothing of it is stored here. */
  upstream?: string
}

/** The record of a whole model: its manifest, read from (or just written to) `dir`, whose text hashes to `digest`. */
export function recordOf (dir: string, manifest: Manifest, digest: string): ModelRecord {
  const files = manifest.files.reduce((sum, f) => sum + f.size, 0)
  const variants = manifest.variants.reduce((sum, v) => sum + v.size, 0)
  const g = manifest.gguf
  return {
    id: manifest.name,
    name: manifest.name,
    size: files + variants,
    format: manifest.format,
    modified_at: manifest.modified_at,
    digest,
    dir,
    files: manifest.files,
    variants: manifest.variants,
    gguf: g,
    kind: modelKind(g),
    projector: manifest.projector ?? null,
    projectorInputs: manifest.projector ? projectorInputsOf(manifest.projector_inputs) : [],
    system: manifest.system ?? null,
    parameters: manifest.parameters ?? null,
    template: manifest.template ?? null,
    manifest,
  }
}

/** A manifest's `projector_inputs`, as far as it names inputs (a file edited by hand may hold anything); absent: images. */
function projectorInputsOf (given: unknown): ProjectorInput[] {
  if (!Array.isArray(given)) return ['image']
  return (['image', 'audio'] as const).filter((input) => given.includes(input))
}
