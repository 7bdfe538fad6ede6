import { constants } from 'node:fs'
import { access } from 'node:fs/promises'
import { delimiter, join } from 'node:path'

/** Where `command` is found on PATH as a shell would find it (the first executable file), or undefined. */
export async function onPath (command: string, path = process.env.PATH ?? ''): Promise<string | undefined> {
  for (const dir of path.split(delimiter)) {
    if (dir === '') continue
    const candidate = join(dir, command)
    try {
      await access(candidate, constants.X_OK)
      return candidate
    } catch {
      // Not here.
    }
  }
  return undefined
}
