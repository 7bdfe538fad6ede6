import { existsSync } from 'node:fs'
import { homedir } from 'node:os'
import { dirname, isAbsolute, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

/** Expands a leading `~` and resolves a relative path against `base`. */
export function resolvePath(path: string, base: string): string {
  if (path === '~') return homedir()
  if (path.startsWith('~/')) return join(homedir(), path.slice(2))
  return isAbsolute(path) ? path : resolve(base, path)
}

/**
 * The folder holding llamagate's package.json. Found by walking up from this file, because the same code
 * runs from `core/` (tests, through tap's TypeScript loader) and from `dist/core/` (the built package).
 */
export const PACKAGE_ROOT: string = (() => {
  let dir = dirname(fileURLToPath(import.meta.url))
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir)
    if (parent === dir) throw new Error('llamagate: package.json not found above ' + fileURLToPath(import.meta.url))
    dir = parent
  }
  return dir
})()

/** The config.yaml shipped with the package: the documented defaults. */
export const SHIPPED_CONFIG = join(PACKAGE_ROOT, 'config.yaml')
