import { llama, qwen2 } from './llama.js'
import type { Architecture, ArchitectureWriter } from './types.js'

export type { Architecture, ArchitectureWriter, Dims, Weights } from './types.js'

/** Each architecture's keys and tensors, by its GGUF name (`general.architecture`). */
export const ARCHITECTURES: Record<Architecture, ArchitectureWriter> = { qwen2, llama }
