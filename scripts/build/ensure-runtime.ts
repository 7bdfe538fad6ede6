import { readFileSync, realpathSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { loadConfigAndPlugins } from '../../core/platform/plugin-manifests.js'
import { RuntimeRegistry } from '../../runtimes/registry.js'
import { BUILD_RECIPE, buildRuntime } from '../../runtimes/build/build-runtime.js'
import { patchFiles, patchSetDigest } from '../../runtimes/build/llama-cpp-patches.js'

/** The recipe a runtime we built was made with (0 when it predates recipes), and the digest of its patch set. */
function madeWith (binDir: string): { recipe: number, patches: string | null } {
  try {
    const info = JSON.parse(readFileSync(join(binDir, '..', 'build-info.json'), 'utf8')) as { recipe?: number, patches_digest?: string | null }
    return { recipe: info.recipe ?? 0, patches: info.patches_digest ?? null }
  } catch {
    return { recipe: 0, patches: null }
  }
}

/** A runtime we built is current when its recipe is, and, built from the pinned source (`patches`), its patch set. */
function current (binDir: string, patches: string | null): boolean {
  const made = madeWith(binDir)
  return made.recipe >= BUILD_RECIPE && (patches === null || made.patches === patches)
}

/**
 * Makes sure a CPU llama-server exists (what `npm test` and `npm start` need on a fresh machine): a no-op
 * when the registry finds one, else one build, kept under the data folder for every later run.
 */
async function main (): Promise<void> {
  // As serve reads config.yaml: a plugin's runtime kind named there, and its builds, are the registry's too.
  const { config } = await loadConfigAndPlugins()
  const registry = await RuntimeRegistry.create({ config })
  // A checkout of the user's is built as it is: no patch set to compare.
  const patches = config.llamaCppSrc === null ? await patchSetDigest(await patchFiles()) : null
  const cpuBuild = registry.builds.find((b) => b.backend === 'cpu' && (b.source !== 'built' || current(b.binDir, patches)))
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
