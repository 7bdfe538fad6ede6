import { constants } from 'node:fs'
import { access, readdir, stat, statfs } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { formatBytes } from './human.js'

// A check's shape is the platform's (a plugin's doctor checks use it too).
import { fail, ok, warn, type Check } from '../../platform/check.js'

export { fail, ok, warn, type Check }

/** Under this much free room a warning: a small model at 4 bits is about 1 GiB, a 7B one 4 GiB. */
const LOW_ROOM_BYTES = 4 * 1024 ** 3

export interface ModelsFolder {
  dir: string
  exists: boolean
  writable: boolean
  /** Why it cannot be written, when it cannot. */
  error: string | null
  models: number
  /** Free bytes on its file system (the nearest folder that exists), null when that cannot be read. */
  freeBytes: number | null
}

/** The models folder without touching it: whether serve can write there, what it holds, and the room left. */
export async function inspectModelsFolder (dir: string): Promise<ModelsFolder> {
  const folder: ModelsFolder = { dir, exists: false, writable: false, error: null, models: 0, freeBytes: null }
  // The folder, or the nearest folder above it that exists: serve makes the rest.
  let existing = dir
  for (;;) {
    const info = await stat(existing).catch((err: NodeJS.ErrnoException) => err)
    if (!(info instanceof Error)) {
      if (!info.isDirectory()) { folder.error = `${existing} is not a folder`; return folder }
      break
    }
    // ENOTDIR: something above is a file, which the walk up then finds and names.
    if ((info.code !== 'ENOENT' && info.code !== 'ENOTDIR') || dirname(existing) === existing) { folder.error = `${existing}: ${info.code ?? info.message}`; return folder }
    existing = dirname(existing)
  }
  folder.exists = existing === dir
  try {
    await access(existing, constants.W_OK | constants.X_OK)
    folder.writable = true
  } catch (err) {
    folder.error = `${existing} cannot be written (${(err as NodeJS.ErrnoException).code})`
  }
  const fs = await statfs(existing).catch(() => null)
  folder.freeBytes = fs === null ? null : fs.bavail * fs.bsize
  if (folder.exists) folder.models = await countModels(dir)
  return folder
}

/** Folders `<owner>/<name>` holding a manifest, as the store lists them (dot-folders are its own). */
async function countModels (dir: string): Promise<number> {
  let count = 0
  for (const owner of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
    if (!owner.isDirectory() || owner.name.startsWith('.')) continue
    for (const model of await readdir(join(dir, owner.name), { withFileTypes: true }).catch(() => [])) {
      if (model.isDirectory() && await stat(join(dir, owner.name, model.name, 'manifest.json')).then(() => true, () => false)) count++
    }
  }
  return count
}

export function modelsCheck (folder: ModelsFolder): Check {
  if (!folder.writable) {
    return fail('models', `${folder.dir} cannot be used: ${folder.error}`, 'point models_dir (config.yaml, LLAMAGATE_MODELS or --models) at a folder you can write, or fix its permissions')
  }
  const room = folder.freeBytes === null ? 'free room unknown' : `${formatBytes(folder.freeBytes)} free on its file system`
  const held = folder.exists ? `${folder.models} model${folder.models === 1 ? '' : 's'}` : 'not made yet (serve makes it)'
  const message = `${folder.dir}: ${held}, ${room}`
  if (folder.freeBytes !== null && folder.freeBytes < LOW_ROOM_BYTES) return warn('models', message, 'free some room, or point models_dir at a larger disk')
  return ok('models', message)
}
