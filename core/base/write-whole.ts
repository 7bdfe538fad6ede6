import { randomBytes } from 'node:crypto'
import { mkdir, open, rename, rm } from 'node:fs/promises'
import { dirname } from 'node:path'

/**
 * Writes `file` whole: a temporary file beside it, synced, renamed over it, so that a reader or a crash sees the
 * old contents or the new, never half. `mode` applies to a new file (600 for secrets' hashes). The temporary name is
 * random and made new (O_EXCL): a link planted beside the file, in a folder others may write, is never written through.
 */
export async function writeWhole (file: string, contents: string | Uint8Array, mode = 0o644): Promise<void> {
  await mkdir(dirname(file), { recursive: true })
  const temporary = `${file}.tmp-${process.pid}-${randomBytes(6).toString('hex')}`
  const handle = await open(temporary, 'wx', mode)
  try {
    await handle.writeFile(contents)
    await handle.sync()
  } finally {
    await handle.close()
  }
  try {
    await rename(temporary, file)
  } catch (err) {
    await rm(temporary, { force: true })
    throw err
  }
}
