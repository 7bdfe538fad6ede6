import { existsSync } from 'node:fs'
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { execa } from 'execa'
import type { RuntimeBuild } from '../../runtimes/types.js'
import { CHAT_FORMATS, TINY_HYBRID, type ChatFormat } from '../fixtures/realistic-architectures/chat-formats.js'
import { writeRealisticModel, type RealisticModelOptions } from '../fixtures/realistic-model.js'

/**
 * The bench's models of a real size: random weights in the shape of a released model, with the real vocabulary
 * and chat template from llama.cpp's tree, quantized by llama.cpp's own llama-quantize as a user's download
 * would be. What they say is noise; what they cost per token (matrix sizes, vocabulary, KV cache) is real.
 */
export interface BenchShape {
  /** What the shape imitates. */
  imitates: string
  /** The realistic writer's options: architecture, sizes, vocabulary and template (no steering: the bench ignores EOS). */
  model: Omit<RealisticModelOptions, 'file' | 'llamaCppSrc' | 'name' | 'steering'>
}

const LLAMA_3 = { architecture: 'llama', vocab: 'llama-bpe', eosToken: '<|eot_id|>', nCtxTrain: 131072 } as const

/** A chat format of the newer architectures, less its steering. */
function format (f: ChatFormat): Omit<ChatFormat, 'steering'> {
  const { steering: _, ...rest } = f
  return rest
}

export const SHAPES = {
  /** Not a real size: the scenarios' own test runs them end to end on it in seconds. */
  'llama-tiny': {
    imitates: 'a test-sized Llama 3',
    model: { ...LLAMA_3, template: 'meta-llama-Llama-3.2-3B-Instruct', nEmbd: 64, nLayer: 2, nHead: 4, nHeadKv: 2, nFf: 128 },
  },
  'llama-1b': {
    imitates: 'Llama-3.2-1B-Instruct',
    model: { ...LLAMA_3, template: 'meta-llama-Llama-3.2-3B-Instruct', nEmbd: 2048, nLayer: 16, nHead: 32, nHeadKv: 8, nFf: 8192 },
  },
  'llama-8b': {
    imitates: 'Llama-3.1-8B-Instruct',
    model: { ...LLAMA_3, template: 'meta-llama-Llama-3.1-8B-Instruct', nEmbd: 4096, nLayer: 32, nHead: 32, nHeadKv: 8, nFf: 14336 },
  },
  /**
   * The architectures llama-server keeps context checkpoints for (realistic-architectures/): a hybrid of Gated
   * DeltaNet and full attention, and sliding windows beside global layers, each at its small released size and
   * at a test size. Qwen3.5 thinks: its answers are steered to a word, which streams as reasoning, where a
   * random model's would be whitespace that llama-server holds back.
   */
  'qwen35-2b': {
    imitates: 'Qwen3.5-2B',
    model: {
      ...format(CHAT_FORMATS.qwen35), nEmbd: 2048, nLayer: 24, nHead: 8, nHeadKv: 2, headDim: 256, nFf: 6144,
      linear: { keyHeads: 16, valueHeads: 16, headDim: 128 }, globalEvery: 4, nCtxTrain: 262144, tiedSteering: 'Done',
    },
  },
  'qwen35-tiny': {
    imitates: 'a test-sized Qwen3.5',
    model: { ...format(CHAT_FORMATS.qwen35), ...TINY_HYBRID, nEmbd: 64, nHead: 4, nHeadKv: 2, nFf: 128, tiedSteering: 'Done' },
  },
  'gemma3-1b': {
    imitates: 'gemma-3-1b-it',
    model: {
      ...format(CHAT_FORMATS.gemma3), nEmbd: 1152, nLayer: 26, nHead: 4, nHeadKv: 1, headDim: 256, nFf: 6912,
      slidingWindow: 512, globalEvery: 6, nCtxTrain: 32768,
      // Gemma scales its input embedding by √n_embd: at the default scale every answer is the last token, certain.
      embeddingScale: 0.5 / Math.sqrt(1152),
    },
  },
  'gemma3-tiny': {
    imitates: 'a test-sized Gemma 3',
    model: { ...format(CHAT_FORMATS.gemma3), ...TINY_HYBRID, nEmbd: 64, nHead: 4, nHeadKv: 2, nFf: 128 },
  },
} satisfies Record<string, BenchShape>

export type ShapeName = keyof typeof SHAPES
export const QUANTS = ['Q4_K_M', 'Q8_0'] as const
export type Quant = (typeof QUANTS)[number]

/** `llama-1b-q4_k_m` → the shape and the quantization; an error naming the choices otherwise. */
export function parseBenchModel (name: string): { shape: ShapeName, quant: Quant } {
  for (const shape of Object.keys(SHAPES) as ShapeName[]) {
    for (const quant of QUANTS) if (name.toLowerCase() === `${shape}-${quant.toLowerCase()}`) return { shape, quant }
  }
  const choices = (Object.keys(SHAPES) as ShapeName[]).flatMap((s) => QUANTS.map((q) => `${s}-${q.toLowerCase()}`))
  throw new Error(`unknown bench model ${JSON.stringify(name)}: one of ${choices.join(', ')}`)
}

/**
 * The shape's GGUF at each quantization under `benchDir`, made on first use (one F16 file written, quantized to
 * each, then removed; a few minutes for the 1B shape on 2 cores) and kept for the next run. Each written under a
 * temporary name and renamed, so that an interrupted run leaves nothing half-made.
 */
export async function ensureBenchModels (options: { shape: ShapeName, quants: readonly Quant[], build: RuntimeBuild, llamaCppSrc: string, benchDir: string, say: (line: string) => void }): Promise<Map<Quant, string>> {
  const { shape, build, benchDir, say } = options
  const files = new Map(options.quants.map((quant) => [quant, join(benchDir, `${shape}-${quant.toLowerCase()}.gguf`)]))
  const s = SHAPES[shape]
  // Files made by another recipe of the shape are made again: a bench must not measure yesterday's model.
  const recipeFile = join(benchDir, `${shape}.recipe.json`)
  const recipe = JSON.stringify(s.model)
  const current = await readFile(recipeFile, 'utf8').catch(() => null) === recipe
  const missing = [...files].filter(([, file]) => !current || !existsSync(file))
  if (missing.length === 0) return files
  const quantize = build.quantizePath
  if (quantize === null) throw new Error(`the ${build.backend} runtime has no llama-quantize: npm run runtime:build`)
  await mkdir(benchDir, { recursive: true })
  if (!current) {
    say(`the ${shape} shape's files are missing or were made by another recipe: making them`)
    await Promise.all(QUANTS.map((q) => rm(join(benchDir, `${shape}-${q.toLowerCase()}.gguf`), { force: true })))
  }
  const f16 = join(benchDir, `${shape}-f16.gguf.partial`)
  try {
    const m: BenchShape['model'] = s.model
    say(`writing the ${shape} shape (${s.imitates}: ${m.architecture} architecture, ${m.nLayer} layers × ${m.nEmbd}, ${m.vocab} vocabulary) with random F16 weights...`)
    const started = Date.now()
    await writeRealisticModel({ ...m, file: f16, llamaCppSrc: options.llamaCppSrc, name: `${s.imitates} shape, random weights` })
    say(`  written in ${((Date.now() - started) / 1000).toFixed(0)} s`)
    for (const [quant, file] of missing) {
      say(`  quantizing to ${quant} with llama-quantize...`)
      const partial = `${file}.partial`
      try {
        await execa(quantize, [f16, partial, quant], { stdio: 'ignore' })
        await rename(partial, file)
      } finally {
        await rm(partial, { force: true })
      }
    }
    await writeFile(`${recipeFile}.partial`, recipe)
    await rename(`${recipeFile}.partial`, recipeFile)
    return files
  } finally {
    await rm(f16, { force: true })
  }
}
