import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { PACKAGE_ROOT } from './paths.js'

let cached: string | null = null

/** llamagate's version, from its package.json. */
export function version (): string {
  cached ??= (JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string }).version
  return cached
}
