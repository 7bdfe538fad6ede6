import { createHash } from 'node:crypto'
import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { execa } from 'execa'
import { PACKAGE_ROOT } from '../../core/base/paths.js'

/**
 * llamagate's patch set for llama.cpp: where the engine itself had to change (each patch says why in its header,
 * written to be offered upstream). Applied in name order to the pinned source before it is built.
 */
export const PATCHES_DIR = join(PACKAGE_ROOT, 'runtimes', 'build', 'patches')

/** The patch files, in the order they apply. */
export async function patchFiles (dir = PATCHES_DIR): Promise<string[]> {
  return (await readdir(dir)).filter((name) => name.endsWith('.patch')).sort().map((name) => join(dir, name))
}

/**
 * Applies the patches to the source tree `src`, a git checkout of the pinned release that llamagate keeps: its
 * tracked files are put back as released first, so that a rebuild with a changed patch set (or after an interrupted
 * one) starts from the same tree. @returns the patches' names
 * @throws Error naming a patch that does not apply: the source is not the release it was made for
 */
export async function applyPatches (src: string, patches: string[]): Promise<string[]> {
  const git = (...args: string[]) => execa('git', ['-C', src, ...args], { reject: false })
  const reset = await git('checkout', '--quiet', '--', '.')
  if (reset.exitCode !== 0) throw new Error(`${src} could not be put back as released before patching: ${reset.stderr.trim().split('\n')[0] ?? ''}`)
  for (const patch of patches) {
    const applied = await git('apply', patch)
    if (applied.exitCode !== 0) throw new Error(`the llama.cpp patch ${patch} does not apply to ${src}: ${applied.stderr.trim().split('\n')[0] ?? ''}`)
  }
  return patches.map((p) => p.slice(p.lastIndexOf('/') + 1))
}

/**
 * What a build's patches were, as one digest of their names and texts: part of a built runtime's cache key, so that a
 * changed patch set is built again even where the recipe number was not raised.
 */
export async function patchSetDigest (patches: string[]): Promise<string> {
  const hash = createHash('sha256')
  for (const patch of patches) hash.update(`${patch.slice(patch.lastIndexOf('/') + 1)}\0`).update(await readFile(patch)).update('\0')
  return hash.digest('hex').slice(0, 16)
}
