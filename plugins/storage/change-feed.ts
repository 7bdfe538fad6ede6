import { watch, type FSWatcher } from 'node:fs'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'

/**
 * Tells the other llamagate processes on the same models folder that a model changed, and hears them:
 * every commit or delete touches `<changes>/<key>`; a watcher (inotify, one folder, not recursive) hears
 * the touch. So `llamagate import` while the server runs shows up in /api/tags without the server ever
 * reading the disk per request.
 */
export class ChangeFeed {
  private watcher: FSWatcher | null = null

  constructor (readonly dir: string) {}

  async notify (key: string): Promise<void> {
    await mkdir(this.dir, { recursive: true })
    await writeFile(join(this.dir, key), `${process.pid} ${new Date().toISOString()}\n`)
  }

  /**
   * Calls `onChange` with the key of each model another process (or this one) changed.
   * @returns false when the platform cannot watch (then changes by other processes show after a restart)
   */
  async watch (onChange: (key: string) => void, onError: (err: Error) => void): Promise<boolean> {
    await mkdir(this.dir, { recursive: true })
    try {
      this.watcher = watch(this.dir, { persistent: false }, (_event, filename) => {
        if (filename) onChange(filename.toString())
      })
      this.watcher.on('error', onError)
      return true
    } catch (err) {
      onError(err as Error)
      return false
    }
  }

  close (): void {
    this.watcher?.close()
    this.watcher = null
  }
}
