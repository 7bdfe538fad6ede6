import { basename } from 'node:path'
import { CONVERTER_DTYPES } from '../../core/config/options-schema.js'
import type { ModelStore } from '../storage/model-store.js'
import type { Converter, ConvertProgress } from './converter.js'

/**
 * Makes (once) and records in the manifest the GGUF variant `dtype` of the SafeTensors model `name`; nothing to do
 * for a GGUF model or a variant already recorded. Concurrent callers share one conversion.
 */
export type EnsureVariant = (name: string, dtype: string, opts?: { signal?: AbortSignal, onProgress?: (p: ConvertProgress) => void }) => Promise<void>

/**
 * `app.ensureVariant`: where a SafeTensors model becomes a GGUF one. Its two callers: a pull, once the files are
 * down and the model committed (plugins/download/pull-service.ts, to the pull's dtype or default_options.dtype,
 * its progress as the pull's events), and the scheduler, when a request asks for a dtype the model has no GGUF of
 * yet (scheduler.ts). The steps: the store's record (a GGUF model needs nothing) → for a quantized type, the f16
 * first, made and recorded the same way → the converter (converter.ts: convert_hf_to_gguf.py, then llama-quantize,
 * each run shared between callers, a GGUF already in the folder taken as it is) → the variant recorded in the
 * model's manifest under the store's cross-process lock (model-creation.ts), so that it is listed and counted.
 */
export function variantMaker (store: ModelStore, converter: Converter): EnsureVariant {
  const has = (name: string, dtype: string): boolean => store.get(name).manifest.variants.some((v) => v.dtype === dtype)
  const make: EnsureVariant = async (name, dtype, opts = {}) => {
    const record = store.get(name)
    dtype = dtype.toLowerCase()
    if (record.format !== 'safetensors' || has(name, dtype)) return
    // A quantized type starts from the f16: make and record that first, so it is listed and counted too.
    if (!(CONVERTER_DTYPES as readonly string[]).includes(dtype) && !has(name, 'f16')) await make(name, 'f16', opts)
    const made = await converter.ensureVariant({ modelDir: record.dir, dtype, ...opts })
    if (!has(name, dtype)) await store.addVariant(name, { dtype, file: basename(made.file), size: made.size, sha256: made.sha256 })
  }
  return make
}
