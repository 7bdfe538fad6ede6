import { lstat, mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { isAlive } from '../../../base/process-alive.js'
import type { AgentRecipe, AgentWiring } from './recipe.js'

/** A run's folder: `llamagate-<agent>-run<pid>-<random>`, the pid of the launch that made it. */
const RUN_FOLDER = /^llamagate-[a-z0-9-]+-run(\d+)-[A-Za-z0-9]{6}$/

/**
 * The private folder an agent's settings are written into: mkdtemp makes it 0700, each file is 0600, so only its
 * owner reads the settings (and any key in them). A run's folder carries launch's pid, so that one left by a launch
 * killed outright (SIGKILL: no cleanup ran) is removed by the next launch; `--print`'s is the user's to keep.
 */
export async function settingsFolder (agent: string, use: 'run' | 'print' = 'run'): Promise<string> {
  return await mkdtemp(join(tmpdir(), use === 'run' ? `llamagate-${agent}-run${process.pid}-` : `llamagate-${agent}-`))
}

/**
 * Removes the run folders whose launch is gone: a key left in the temporary folder after a kill lasts until the next
 * launch, not until a reboot. Only folders of this user's (another's cannot be removed, and is not looked into), only
 * real folders (a link named like one is left alone).
 */
export async function removeOrphanedFolders (root = tmpdir()): Promise<string[]> {
  const removed: string[] = []
  const uid = process.getuid?.()
  for (const name of await readdir(root).catch(() => [])) {
    const pid = RUN_FOLDER.exec(name)?.[1]
    if (pid === undefined || Number(pid) === process.pid || isAlive(Number(pid))) continue
    const path = join(root, name)
    const info = await lstat(path).catch(() => null)
    if (info === null || !info.isDirectory() || (uid !== undefined && info.uid !== uid)) continue
    await rm(path, { recursive: true, force: true })
    removed.push(path)
  }
  return removed
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
