import { readGgufHeader } from '../../core/base/gguf-header.js'

/** What a projector lets a model take beside text: pictures, sound, or both (a model like Qwen2.5-Omni). */
export type ProjectorInput = 'image' | 'audio'

/** A projector GGUF's header, as far as the store checks and records it. */
export interface ProjectorHeader {
  architecture: string | null
  inputs: ProjectorInput[]
}

/**
 * Reads what a projector (`mmproj`) GGUF encodes, from the flags llama.cpp's converter writes and clip.cpp reads:
 * `clip.has_vision_encoder`, `clip.has_audio_encoder`. A file with neither is an old vision projector (LLaVA's first
 * ones said nothing): images. @throws when it is not a readable GGUF file
 */
export async function readProjectorHeader (path: string): Promise<ProjectorHeader> {
  const { metadata } = await readGgufHeader(path, { maxArrayLength: 0 })
  const meta = metadata as Record<string, unknown>
  const architecture = typeof meta['general.architecture'] === 'string' ? meta['general.architecture'] as string : null
  const audio = meta['clip.has_audio_encoder'] === true
  const vision = meta['clip.has_vision_encoder'] === true || !audio
  return { architecture, inputs: [...(vision ? ['image' as const] : []), ...(audio ? ['audio' as const] : [])] }
}
