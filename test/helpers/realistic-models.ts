import { createHash } from 'node:crypto'
import { existsSync } from 'node:fs'
import { mkdir, readFile, rename, rm } from 'node:fs/promises'
import { homedir } from 'node:os'
import { join } from 'node:path'
import { writeRealisticModel, type RealisticModelOptions } from '../../scripts/realistic-model.js'
import { cpuRuntime } from './runtime.js'

/** The fixtures the tests use: a real vocabulary and template from the runtime's own llama.cpp tree. */
export const REALISTIC = {
  /** Qwen2.5-Instruct's template: tools (Hermes-style <tool_call>), JSON schemas. */
  qwen25: { vocab: 'qwen2', template: 'Qwen-Qwen2.5-7B-Instruct', eosToken: '<|im_end|>' },
  /** DeepSeek-R1-Distill-Qwen's template: the answer opens with <think>, so what follows is reasoning. */
  r1: { vocab: 'qwen2', template: 'deepseek-ai-DeepSeek-R1-Distill-Qwen-32B', eosToken: '<|endoftext|>' },
} satisfies Record<string, Omit<RealisticModelOptions, 'file' | 'llamaCppSrc'>>

const made = new Map<string, Promise<string>>()

/**
 * A realistic tiny model's GGUF (scripts/realistic-model.ts), made once per machine and source tree and kept
 * under ~/.llamagate/test-fixtures (about 20 MB each, out of the clone). Written to a temporary name and
 * renamed, so that a test run killed mid-write leaves nothing half-made for the next one.
 */
export function realisticModel (kind: keyof typeof REALISTIC): Promise<string> {
  let file = made.get(kind)
  if (file === undefined) {
    file = (async () => {
      const runtime = await cpuRuntime()
      const info = JSON.parse(await readFile(join(runtime.binDir, '..', 'build-info.json'), 'utf8')) as { source?: string, commit?: string }
      if (!info.source || !existsSync(join(info.source, 'models'))) {
        throw new Error(`the runtime at ${runtime.binDir} does not say which llama.cpp tree it was built from (build-info.json "source"), or that tree is gone: the realistic fixtures are made from its models/ folder`)
      }
      const options = REALISTIC[kind]
      const key = createHash('sha256').update(JSON.stringify({ options, commit: info.commit, generator: 2 })).digest('hex').slice(0, 12)
      const dir = join(process.env.LLAMAGATE_HOME ?? join(homedir(), '.llamagate'), 'test-fixtures')
      const target = join(dir, `${kind}-${key}.gguf`)
      if (existsSync(target)) return target
      await mkdir(dir, { recursive: true })
      const partial = `${target}.tmp-${process.pid}`
      try {
        await writeRealisticModel({ ...options, file: partial, llamaCppSrc: info.source, name: `tiny ${kind}` })
        await rename(partial, target)
      } finally {
        await rm(partial, { force: true })
      }
      return target
    })()
    made.set(kind, file)
  }
  return file
}
