import { readdirSync } from 'node:fs'
import { isAbsolute, join, relative, sep } from 'node:path'

/**
 * The store's own bookkeeping under the models folder: `locks/` (proper-lockfile) and `changes/` (one
 * marker per model, replaced on every change so that other processes on the same folder refresh). The
 * leading dot keeps it apart from model owners, which never start with one.
 */
export const STATE_DIR = '.llamagate'

/**
 * One key per model, whatever the case it is written in (lookup is case-insensitive, as on the hub), so
 * `Acme/Foo` and `acme/foo` share one lock. `@` never occurs in a name, so the key maps back to one id.
 */
export function modelKey (id: string): string {
  return id.toLowerCase().replace('/', '@')
}

/** The `<owner>/<name>` of a key, or null for a file that is not one. */
export function keyToId (key: string): string | null {
  const at = key.indexOf('@')
  return at > 0 && at === key.lastIndexOf('@') ? `${key.slice(0, at)}/${key.slice(at + 1)}` : null
}

/**
 * The folder of a model: an existing one whose name differs only in case (so a pull of `ACME/foo` resumes
 * the partial download of `acme/foo`), else `<modelsDir>/<owner>/<name>` as written. Reads two folder
 * listings: for writers, never on a request's hot path.
 */
export function findModelDir (modelsDir: string, owner: string, name: string): string {
  const ownerDir = matchEntry(modelsDir, owner)
  return join(modelsDir, ownerDir, matchEntry(join(modelsDir, ownerDir), name))
}

function matchEntry (dir: string, wanted: string): string {
  let entries: string[]
  try {
    entries = readdirSync(dir, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name)
  } catch {
    return wanted
  }
  if (entries.includes(wanted)) return wanted
  const lower = wanted.toLowerCase()
  return entries.find((e) => e.toLowerCase() === lower) ?? wanted
}

/** Whether `name` (from a manifest) stays inside `dir`: no absolute paths, no climbing out. */
export function isInside (dir: string, name: string): boolean {
  if (name === '' || isAbsolute(name) || name.includes('\0')) return false
  const rel = relative(dir, join(dir, name))
  return rel !== '' && !rel.startsWith(`..${sep}`) && rel !== '..'
}
