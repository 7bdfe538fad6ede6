import { stat } from 'node:fs/promises'
import { readGgufHeader } from '../../core/base/gguf-header.js'
import type { ModelRecord } from '../storage/model-record.js'

// Arrays longer than this (token lists, merges) are emptied unless `verbose`, as Ollama does.
const SHORT_ARRAY = 5

// Reading a header with a real vocabulary takes a few tens of ms even with its arrays read past, and clients ask
// /api/show before each chat (`ollama run`, Open WebUI). The short form is small: kept per file, by size and mtime.
const SHORT_INFO_CACHE = new Map<string, Record<string, unknown>>()
const SHORT_INFO_CACHE_SIZE = 64

/** A model's own options (config.yaml's over those it was created with), as Ollama's `parameters` text (`key value` lines). */
export function parametersText (options: Record<string, unknown>): string {
  return Object.entries(options).filter(([, v]) => v !== undefined)
    .flatMap(([k, v]) => (Array.isArray(v) ? v : [v]).map((one) => `${k.padEnd(24)}${typeof one === 'string' ? JSON.stringify(one) : String(one)}`))
    .join('\n')
}

/** What the store read from the GGUF at commit, under the GGUF's keys (the file type by name, as the store has it). */
function curatedInfo (r: ModelRecord): Record<string, unknown> {
  const g = r.gguf
  if (!g) return {}
  const info: Record<string, unknown> = {
    'general.architecture': g.architecture,
    'general.parameter_count': g.parameter_count,
    'general.file_type': g.file_type,
    'tokenizer.chat_template': g.chat_template,
  }
  if (g.architecture) {
    const a = g.architecture
    Object.assign(info, {
      [`${a}.context_length`]: g.context_length,
      [`${a}.block_count`]: g.block_count,
      [`${a}.embedding_length`]: g.embedding_length,
      [`${a}.attention.head_count`]: g.head_count,
      [`${a}.attention.head_count_kv`]: g.head_count_kv,
    })
  }
  return info
}

/**
 * The GGUF's metadata, read from its header when asked (a show is rare; the store keeps only what requests
 * need): long arrays emptied unless `verbose`, the template left to `template`, numbers as JSON numbers. The
 * fields the store reads at commit (parameter count, file type by name) are kept as they are there.
 */
export async function modelInfo (record: ModelRecord, verbose: boolean): Promise<Record<string, unknown>> {
  const file = record.manifest.primary ?? record.variants[0]?.file
  const info = file ? await ggufMetadata(`${record.dir}/${file}`, verbose) : {}
  return { ...info, ...curatedInfo(record) }
}

/** A GGUF header's metadata as /api/show gives it (a model's `model_info`, a projector's `projector_info`). */
export async function ggufMetadata (path: string, verbose: boolean): Promise<Record<string, unknown>> {
  if (verbose) return readMetadata(path, true)
  const { size, mtimeMs } = await stat(path)
  const key = `${path}\0${size}\0${mtimeMs}`
  let info = SHORT_INFO_CACHE.get(key)
  if (info === undefined) {
    info = await readMetadata(path, false)
    if (SHORT_INFO_CACHE.size >= SHORT_INFO_CACHE_SIZE) SHORT_INFO_CACHE.delete(SHORT_INFO_CACHE.keys().next().value!)
    SHORT_INFO_CACHE.set(key, info)
  }
  return structuredClone(info)
}

async function readMetadata (path: string, verbose: boolean): Promise<Record<string, unknown>> {
  const info: Record<string, unknown> = {}
  const { metadata } = await readGgufHeader(path, verbose ? {} : { maxArrayLength: SHORT_ARRAY })
  for (const [key, value] of Object.entries(metadata)) {
    if (key === 'tokenizer.chat_template') continue
    info[key] = Array.isArray(value) ? value.map(plain) : plain(value)
  }
  return info
}

function plain (value: unknown): unknown {
  return typeof value === 'bigint' ? Number(value) : value
}
