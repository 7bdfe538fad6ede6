import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { Config } from '../../core/platform/config.js'
import type { Logger } from '../../core/base/logger.js'
import type { RuntimeRegistry } from '../../runtimes/registry.js'
import { Converter } from './converter.js'

/** What the converter reads of the configuration. */
export type ConverterSettings = Pick<Config, 'conversion' | 'llamaCppSrc' | 'dataDir'>

/**
 * The converter for this configuration and these runtime builds: what the server uses, and what
 * `llamagate doctor` asks about, so that both see the same readiness.
 */
export async function converterFor (config: ConverterSettings, runtimes: RuntimeRegistry, log?: Pick<Logger, 'info' | 'warn'>): Promise<Converter> {
  // The tree the chosen runtime was built from, by default: its converter matches its llama-quantize.
  const build = runtimes.chosen?.quantizePath ? runtimes.chosen : runtimes.builds.find((b) => b.quantizePath) ?? null
  return new Converter({
    python: config.conversion.python,
    llamaCppSrc: config.llamaCppSrc,
    buildSource: build ? await buildSourceOf(build.binDir) : null,
    dataDir: config.dataDir,
    quantizePath: build?.quantizePath ?? null,
    timeoutMs: config.conversion.timeoutMs,
    ...(log ? { log } : {}),
  })
}

async function buildSourceOf (binDir: string): Promise<string | null> {
  try {
    return (JSON.parse(await readFile(join(binDir, '..', 'build-info.json'), 'utf8')) as { source?: string }).source ?? null
  } catch {
    return null
  }
}
