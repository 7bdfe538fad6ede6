import { mkdir, mkdtemp, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import type { AgentRecipe, AgentWiring } from './recipe.js'

/**
 * The private folder an agent's settings are written into for one run: mkdtemp makes it 0700, each file is 0600, so
 * only its owner reads the settings (and any key in them).
 */
export async function settingsFolder (agent: string): Promise<string> {
  return await mkdtemp(join(tmpdir(), `llamagate-${agent}-`))
}

/** Writes the recipe's files into `dir`; returns them by path, with their content. */
export async function writeSettings (recipe: AgentRecipe, wiring: AgentWiring, dir: string): Promise<Array<[string, string]>> {
  const written: Array<[string, string]> = []
  for (const [name, content] of Object.entries(recipe.files?.(wiring, dir) ?? {})) {
    const file = join(dir, name)
    await mkdir(dirname(file), { recursive: true, mode: 0o700 })
    await writeFile(file, content, { mode: 0o600 })
    written.push([file, content])
  }
  return written
}
