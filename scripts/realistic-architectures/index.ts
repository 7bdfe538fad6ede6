import { gemma3, gemma4 } from './gemma.js'
import { lfm2 } from './lfm2.js'
import { llama, qwen2 } from './llama.js'
import { qwen35 } from './qwen35.js'
import type { Architecture, ArchitectureWriter } from './types.js'

export type { Architecture, ArchitectureWriter, Dims, Weights } from './types.js'

/** Each architecture's keys and tensors, by its GGUF name (`general.architecture`). */
export const ARCHITECTURES: Record<Architecture, ArchitectureWriter> = { qwen2, llama, qwen35, lfm2, gemma3, gemma4 }
