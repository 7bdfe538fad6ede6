import { createHash } from 'node:crypto'
import { open, readFile, rename, stat, unlink } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { isAlive } from '../../core/base/process-alive.js'
import type { DecisionInfo } from './decision-info.js'
import type { LinkKind } from './link-file.js'
import type { ProjectorInput } from './projector-inputs.js'

export const MANIFEST = 'manifest.json'

/** What the GGUF says about itself, read once when the model is committed. */
export interface GgufInfo {
  architecture: string | null
  parameter_count: number | null
  context_length: number | null
  file_type: string | null
  block_count: number | null
  embedding_length: number | null
  head_count: number | null
  head_count_kv: number | null
  chat_template: string | null
  /**
   * How the model pools its tokens into one vector (llama.cpp's `<arch>.pooling_type`: 0 none, 1 mean, 2 cls,
   * 3 last, 4 rank); null when the GGUF does not say, as for chat models. Absent in manifests written before it.
   */
  pooling_type?: number | null
  /** A decision model's type, question template and temperatures (decision-info.ts); null or absent: not one. */
  decision?: DecisionInfo | null
}

export interface ManifestFile { name: string, size: number, sha256: string | null }
export interface Variant { dtype: string, file: string, size: number, sha256: string | null }

/** The one description of a model on disk. Written last and atomically: a model without one is not whole. */
export interface Manifest {
  version: 1
  name: string
  format: 'gguf' | 'safetensors'
  /** Where it came from; a copy or a model created from another (`/api/copy`, `/api/create`) names it in `model`. */
  source: { type: 'hub' | 'import' | 'copy' | 'create', repository?: string, commit?: string, path?: string, link?: LinkKind, model?: string }
  files: ManifestFile[]
  /** The GGUF to load (the first part of a split GGUF); null for SafeTensors models. */
  primary: string | null
  /** GGUF files made from a SafeTensors model, by dtype. */
  variants: Variant[]
  /** The vision projector (an `mmproj` GGUF, one of `files`) loaded beside the model; absent or null: none. */
  projector?: string | null
  /**
   * What the projector lets the model take (projector-inputs.ts), read from its header when the manifest is written;
   * absent with a projector: a manifest written before audio projectors, whose projectors were all vision ones.
   */
  projector_inputs?: ProjectorInput[]
  gguf: GgufInfo | null
  /** The system prompt given to `/api/create`: used when a chat brings none. */
  system?: string
  /** Options given to `/api/create`: the model's own defaults (config.yaml's per-model options win). */
  parameters?: Record<string, unknown>
  /** A Jinja chat template given to `/api/create`, used instead of the GGUF's. */
  template?: string
  modified_at: string
}

/**
 * Puts the bytes of a model's files on disk before its manifest says they are whole: without it a power cut
 * can keep the manifest (its rename is synced) and lose data still in the page cache, and the store would
 * list a model whose file is short or full of zeroes. Files already on disk cost next to nothing.
 */
export async function syncFiles (dir: string, names: Iterable<string>): Promise<void> {
  for (const name of names) {
    const file = await open(join(dir, name), 'r')
    try { await file.datasync() } finally { await file.close() }
  }
}

/** Writes `manifest.json` so that a crash leaves the old one or the new one, never half of either. */
export async function writeManifest (dir: string, manifest: Manifest): Promise<string> {
  const text = JSON.stringify(manifest, null, 2)
  const target = join(dir, MANIFEST)
  const temporary = `${target}.tmp-${process.pid}-${Date.now()}`
  const file = await open(temporary, 'w')
  try {
    await file.writeFile(text)
    await file.sync()
  } finally {
    await file.close()
  }
  await rename(temporary, target)
  // The rename is durable only once the folder's entry is on disk.
  const folder = await open(dirname(target), 'r')
  try { await folder.sync() } finally { await folder.close() }
  return createHash('sha256').update(text).digest('hex')
}

export async function readManifest (dir: string): Promise<{ manifest: Manifest, digest: string } | null> {
  let text: string
  try {
    text = await readFile(join(dir, MANIFEST), 'utf8')
  } catch {
    return null
  }
  try {
    const manifest = JSON.parse(text) as Manifest
    if (!isManifest(manifest)) return null
    return { manifest, digest: createHash('sha256').update(text).digest('hex') }
  } catch {
    return null
  }
}

// A manifest edited by hand or by another version: listed only if it has what the store relies on.
function isManifest (m: Manifest): boolean {
  return m !== null && typeof m === 'object' && m.version === 1 && typeof m.name === 'string' &&
    (m.format === 'gguf' || m.format === 'safetensors') && Array.isArray(m.files) && Array.isArray(m.variants) &&
    typeof m.modified_at === 'string' && (m.primary === null || typeof m.primary === 'string')
}

// A manifest is written and renamed in milliseconds: a temporary one this old was left by a writer that died.
const TEMPORARY_MAX_AGE_MS = 60_000

/**
 * Removes what a killed writer of the manifest left behind: a temporary manifest whose writer (its pid is in the
 * name) is gone, or that is older than any write takes. Another process's write under way is left alone: a
 * second process starting on the same folder must not take the file from under its rename.
 */
export async function removeTemporaryManifests (dir: string, entries: string[]): Promise<void> {
  await Promise.all(entries.filter((e) => e.startsWith(`${MANIFEST}.tmp-`)).map(async (e) => {
    const pid = Number(/^manifest\.json\.tmp-(\d+)-/.exec(e)?.[1])
    const age = await stat(join(dir, e)).then((s) => Date.now() - s.mtimeMs, () => Infinity)
    if (age < TEMPORARY_MAX_AGE_MS && isAlive(pid)) return
    await unlink(join(dir, e)).catch(() => {})
  }))
}
