import { readFileSync, realpathSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { loadConfig } from '../core/config.js'
import { RuntimeRegistry } from '../runtimes/registry.js'
import { BUILD_RECIPE, buildRuntime } from '../runtimes/build/build-runtime.js'

/** The recipe a runtime we built was made with (0 when it predates recipes). */
function recipeOf (binDir: string): number {
  try {
    return (JSON.parse(readFileSync(join(binDir, '..', 'build-info.json'), 'utf8')) as { recipe?: number }).recipe ?? 0
  } catch {
    return 0
  }
}

/**
 * Makes sure a CPU llama-server exists (what `npm test` and `npm start` need on a fresh machine): a no-op
 * when the registry finds one, else one build, kept under the data folder for every later run.
 */
async function main (): Promise<void> {
  const config = loadConfig()
  const registry = await RuntimeRegistry.create({ config })
  const cpuBuild = registry.builds.find((b) => b.backend === 'cpu' && (b.source !== 'built' || recipeOf(b.binDir) >= BUILD_RECIPE))
  if (cpuBuild) {
    process.stdout.write(`[runtime] using llama.cpp ${cpuBuild.version} (${cpuBuild.source}) at ${cpuBuild.binDir}\n`)
    return
  }
  process.stdout.write('[runtime] no current CPU llama-server found: building one from source (once)\n')
  await buildRuntime({ backend: 'cpu', dataDir: config.dataDir, source: config.llamaCppSrc })
}

if (process.argv[1] && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) {
  main().catch((err) => { process.stderr.write(`[runtime] ${(err as Error).message}\n`); process.exit(1) })
}
