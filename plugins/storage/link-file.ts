import { copyFile, link, symlink, unlink } from 'node:fs/promises'

/**
 * Puts an existing file into the store without copying it where the file system allows: a hard link (same
 * file system; survives the original's deletion), else a symbolic link, else a copy.
 */
export async function linkOrCopy (source: string, target: string): Promise<'hardlink' | 'symlink' | 'copy'> {
  await unlink(target).catch(() => {})
  try {
    await link(source, target)
    return 'hardlink'
  } catch {
    try {
      await symlink(source, target)
      return 'symlink'
    } catch {
      await copyFile(source, target)
      return 'copy'
    }
  }
}
