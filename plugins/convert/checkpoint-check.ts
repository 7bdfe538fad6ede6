import { open, readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { ConversionError } from '../../core/base/errors.js'

// A safetensors header is a JSON object of at most 100 MB (the format's own limit).
const MAX_HEADER = 100_000_000

/**
 * Checks a Hugging Face checkpoint before spending a converter run on it, so the common mistakes get a
 * plain answer instead of a Python traceback: no config.json or no architectures in it, no weights, a
 * truncated .safetensors file (its header says how long its data is), no tokenizer. What passes may still
 * fail in the converter (an unsupported architecture): that failure carries the tool's own words.
 * @throws ConversionError (422)
 */
export async function checkCheckpoint (dir: string): Promise<void> {
  let names: string[]
  try {
    names = await readdir(dir)
  } catch {
    throw new ConversionError(`cannot convert ${dir}: no such folder`)
  }
  let config: { architectures?: unknown }
  try {
    config = JSON.parse(await readFile(join(dir, 'config.json'), 'utf8'))
  } catch (err) {
    const reason = (err as { code?: string }).code === 'ENOENT' ? 'it has no config.json' : `its config.json is not valid JSON (${(err as Error).message})`
    throw new ConversionError(`cannot convert ${dir}: ${reason}`)
  }
  if (!Array.isArray(config.architectures) || config.architectures.length === 0) {
    throw new ConversionError(`cannot convert ${dir}: config.json names no "architectures" (the converter picks its model class from it)`)
  }
  const weights = names.filter((n) => n.endsWith('.safetensors'))
  if (weights.length === 0 && !names.some((n) => /^pytorch_model.*\.bin$/.test(n))) {
    throw new ConversionError(`cannot convert ${dir}: no *.safetensors weights in it`)
  }
  for (const name of weights) await checkSafetensors(join(dir, name), name)
  if (!names.some((n) => n === 'tokenizer.model' || n === 'tokenizer.json' || n === 'vocab.json')) {
    throw new ConversionError(`cannot convert ${dir}: it has no tokenizer (tokenizer.model, tokenizer.json or vocab.json); a GGUF needs its vocabulary`)
  }
}

async function checkSafetensors (file: string, name: string): Promise<void> {
  const handle = await open(file, 'r')
  try {
    const size = (await handle.stat()).size
    const prefix = Buffer.alloc(8)
    await handle.read(prefix, 0, 8, 0)
    const headerLength = size >= 8 ? Number(prefix.readBigUInt64LE(0)) : -1
    if (headerLength < 2 || headerLength > MAX_HEADER || 8 + headerLength > size) {
      throw new ConversionError(`cannot convert: ${name} is not a whole safetensors file (${size} bytes, header length ${headerLength})`)
    }
    const header = Buffer.alloc(headerLength)
    await handle.read(header, 0, headerLength, 8)
    let tensors: Record<string, { data_offsets?: [number, number] }>
    try {
      tensors = JSON.parse(header.toString('utf8'))
    } catch {
      throw new ConversionError(`cannot convert: ${name} has a damaged safetensors header`)
    }
    let dataEnd = 0
    for (const [key, t] of Object.entries(tensors)) {
      if (key !== '__metadata__' && Array.isArray(t.data_offsets)) dataEnd = Math.max(dataEnd, t.data_offsets[1])
    }
    const expected = 8 + headerLength + dataEnd
    if (size < expected) throw new ConversionError(`cannot convert: ${name} is truncated (${size} of ${expected} bytes); pull the model again`)
  } finally {
    await handle.close()
  }
}
