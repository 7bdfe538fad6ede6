import { createHash } from 'node:crypto'
import { existsSync } from 'node:fs'
import { mkdir, rename, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { execa } from 'execa'
import type { RuntimeBuild } from '../../runtimes/types.js'
import { CHAT_FORMATS, type ChatFormat } from '../fixtures/realistic-architectures/chat-formats.js'
import { writeRealisticModel, type RealisticModelOptions } from '../fixtures/realistic-model.js'
import { ensureBenchModels } from './bench-models.js'

/**
 * The mixed scenario's three models, one of each kind of memory llama-server keeps: a hybrid (Qwen3.5's Gated
 * DeltaNet beside full attention), sliding windows beside global layers (Gemma 3), and plain attention (Llama 3).
 * `tiny`: the bench's test-sized shapes (bench-models.ts), whose prompts cost milliseconds, so that the time figures
 * measure the scheduler's policy; `realistic`: wider and deeper, random weights, so that reading a conversation's
 * prompt again costs seconds on a CPU, as at a real size, while a run still takes minutes on 2 cores.
 */

export const MIXED_SHAPES = ['tiny', 'realistic'] as const
export type MixedShape = (typeof MIXED_SHAPES)[number]
export type MixedModel = { label: string, kind: 'hybrid' | 'sliding-window' | 'plain', file: string }

function format (f: ChatFormat): Omit<ChatFormat, 'steering'> {
  const { steering: _, ...rest } = f
  return rest
}

const WIDTH = 512
const LAYERS = 8
/**
 * About 25M parameters in each one's blocks (8 layers × 512, feed-forward 1536) beside its real vocabulary: a 2,000-token
 * prompt takes seconds to read on one thread of a quiet 2-core machine (the tiny shapes: a tenth of a second), as a
 * real model's does on any machine, while a load costs about what a tiny shape's does (reading the vocabulary).
 */
const REALISTIC: Record<MixedModel['kind'], Omit<RealisticModelOptions, 'file' | 'llamaCppSrc'>> = {
  hybrid: {
    ...format(CHAT_FORMATS.qwen35), nEmbd: WIDTH, nLayer: LAYERS, nHead: 8, nHeadKv: 2, headDim: 64, nFf: 1536,
    linear: { keyHeads: 8, valueHeads: 8, headDim: 64 }, globalEvery: 4, nCtxTrain: 65_536, tiedSteering: 'Done',
  },
  'sliding-window': {
    ...format(CHAT_FORMATS.gemma3), nEmbd: WIDTH, nLayer: LAYERS, nHead: 8, nHeadKv: 2, headDim: 64, nFf: 1536,
    slidingWindow: 512, globalEvery: 4, nCtxTrain: 65_536, embeddingScale: 0.5 / Math.sqrt(WIDTH),
  },
  plain: {
    architecture: 'llama', vocab: 'llama-bpe', eosToken: '<|eot_id|>', template: 'meta-llama-Llama-3.2-3B-Instruct',
    nEmbd: WIDTH, nLayer: LAYERS, nHead: 8, nHeadKv: 2, nFf: 1536, nCtxTrain: 131_072,
  },
}

const TINY = { hybrid: 'qwen35-tiny', 'sliding-window': 'gemma3-tiny', plain: 'llama-tiny' } as const

/**
 * The shape's three GGUFs (Q8_0), made on first use under `benchDir` and kept: the tiny ones as the other scenarios
 * make them, the realistic ones under a name with their recipe's hash, so that a changed recipe makes new files.
 */
export async function ensureMixedModels (o: { shape: MixedShape, build: RuntimeBuild, llamaCppSrc: string, benchDir: string, say: (line: string) => void }): Promise<MixedModel[]> {
  const kinds = Object.keys(TINY) as Array<MixedModel['kind']>
  if (o.shape === 'tiny') {
    const out: MixedModel[] = []
    for (const kind of kinds) {
      const files = await ensureBenchModels({ shape: TINY[kind], quants: ['Q8_0'], build: o.build, llamaCppSrc: o.llamaCppSrc, benchDir: o.benchDir, say: o.say })
      out.push({ label: `${TINY[kind]}-q8_0`, kind, file: files.get('Q8_0')! })
    }
    return out
  }
  await mkdir(o.benchDir, { recursive: true })
  const out: MixedModel[] = []
  for (const kind of kinds) {
    const recipe = REALISTIC[kind]
    const hash = createHash('sha256').update(JSON.stringify(recipe)).digest('hex').slice(0, 8)
    const label = `mixed-${recipe.architecture}-${WIDTH}x${recipe.nLayer}-q8_0`
    const file = join(o.benchDir, `${label}-${hash}.gguf`)
    if (!existsSync(file)) await make(o, kind, recipe, file)
    out.push({ label, kind, file })
  }
  return out
}

async function make (o: { build: RuntimeBuild, llamaCppSrc: string, say: (line: string) => void }, kind: string, recipe: Omit<RealisticModelOptions, 'file' | 'llamaCppSrc'>, file: string): Promise<void> {
  const quantize = o.build.quantizePath
  if (quantize === null) throw new Error(`the ${o.build.backend} runtime has no llama-quantize: npm run runtime:build`)
  const f16 = `${file}.f16.partial`
  const partial = `${file}.partial`
  try {
    o.say(`writing the mixed scenario's ${kind} model (${recipe.architecture}, ${recipe.nLayer} layers × ${recipe.nEmbd}) with random F16 weights, then Q8_0...`)
    await writeRealisticModel({ ...recipe, file: f16, llamaCppSrc: o.llamaCppSrc, name: `mixed bench ${kind}, random weights` })
    await execa(quantize, [f16, partial, 'Q8_0'], { stdio: 'ignore' })
    await rename(partial, file)
  } finally {
    await rm(f16, { force: true })
    await rm(partial, { force: true })
  }
}
