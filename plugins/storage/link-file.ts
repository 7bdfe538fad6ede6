import { access, copyFile, link, symlink, unlink } from 'node:fs/promises'
import { basename, dirname, join, resolve } from 'node:path'

export type LinkKind = 'hardlink' | 'symlink' | 'copy' | 'in-place'

/**
 * Puts an existing file into the store without copying it where the file system allows: a hard link (same
 * file system; survives the original's deletion), else a symbolic link (another file system: the model
 * breaks if the original goes), else a copy (a file system without links).
 */
export async function linkOrCopy (source: string, target: string): Promise<LinkKind> {
  // Re-importing a file from inside the model's own folder: unlinking the target would lose it.
  if (resolve(source) === resolve(target)) return 'in-place'
  await unlink(target).catch(() => {})
  try {
    await link(source, target)
    return 'hardlink'
  } catch {
    try {
      await symlink(resolve(source), target)
      return 'symlink'
    } catch {
      await copyFile(source, target)
      return 'copy'
    }
  }
}

/**
 * Shares a file already in the store with another model: a hard link (the same bytes under two names; either
 * can be deleted without the other), else a copy. Never a symbolic link, which would break with the source.
 */
export async function hardLinkOrCopy (source: string, target: string): Promise<'hardlink' | 'copy'> {
  await unlink(target).catch(() => {})
  try {
    await link(source, target)
    return 'hardlink'
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw err
    await copyFile(source, target)
    return 'copy'
  }
}

const SPLIT = /^(.*)-(\d{5})-of-(\d{5})\.gguf$/i

/** True for parts 2 and later of a split GGUF (`foo-00002-of-00003.gguf`): files that are not a model's entry. */
export function isLaterSplitPart (name: string): boolean {
  const match = SPLIT.exec(basename(name))
  return match !== null && Number(match[2]) !== 1
}

/**
 * The files of a GGUF as llama.cpp splits them (`foo-00001-of-00003.gguf`, ...): all parts, given the first;
 * `[file]` for an unsplit one. llama-server opens the first part and finds the others beside it.
 * @throws Error naming the problem: a later part given, or a part missing
 */
export async function ggufParts (file: string): Promise<string[]> {
  const match = SPLIT.exec(basename(file))
  if (!match) return [file]
  const [, stem, index, count] = match as unknown as [string, string, string, string]
  if (Number(index) !== 1) throw new Error(`${basename(file)} is part ${Number(index)} of a split GGUF: import the first part (-00001-of-${count}.gguf)`)
  const parts: string[] = []
  for (let i = 1; i <= Number(count); i++) {
    const part = join(dirname(file), `${stem}-${String(i).padStart(5, '0')}-of-${count}.gguf`)
    await access(part).catch(() => { throw new Error(`part ${i} of ${count} (${basename(part)}) is missing beside ${basename(file)}`) })
    parts.push(part)
  }
  return parts
}
