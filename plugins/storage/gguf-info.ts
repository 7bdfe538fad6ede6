import { readGgufHeader } from '../../core/base/gguf-header.js'
import { readDecisionInfo } from './decision-info.js'
import type { GgufInfo } from './manifest.js'

/** Reads what /api/show and the scheduler need from a GGUF's header (no array: the vocabulary is read past). */
export async function readGgufInfo (path: string): Promise<GgufInfo> {
  const { metadata, parameterCount } = await readGgufHeader(path, { maxArrayLength: 0 })
  const meta = metadata as Record<string, unknown>
  const arch = typeof meta['general.architecture'] === 'string' ? meta['general.architecture'] as string : null
  const num = (key: string): number | null => {
    const value = meta[arch ? `${arch}.${key}` : key]
    return typeof value === 'number' ? value : typeof value === 'bigint' ? Number(value) : null
  }
  const fileType = meta['general.file_type']
  // Its names of the file types only: loaded when a header is read, not with the server (it brings @huggingface/tasks).
  const { GGMLFileQuantizationType } = await import('@huggingface/gguf')
  return {
    architecture: arch,
    parameter_count: parameterCount ?? null,
    context_length: num('context_length'),
    file_type: typeof fileType === 'number' ? (GGMLFileQuantizationType[fileType] ?? String(fileType)) : null,
    block_count: num('block_count'),
    embedding_length: num('embedding_length'),
    head_count: num('attention.head_count'),
    head_count_kv: num('attention.head_count_kv'),
    chat_template: typeof meta['tokenizer.chat_template'] === 'string' ? meta['tokenizer.chat_template'] as string : null,
    pooling_type: num('pooling_type'),
    decision: readDecisionInfo(meta, arch),
  }
}
