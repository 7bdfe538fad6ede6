import { watch, type FSWatcher } from 'node:fs'
import { mkdir, readdir, rename, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'

export interface ChangeFeedOptions {
  /**
   * How often to look at the markers as well, for changes inotify does not hear: those made on another host
   * (replicas on a shared volume: NFS, EFS, CephFS). 0: never.
   * @default 2000
   */
  pollMs?: number
  /** Whether to listen with inotify too (instant on one host). @default true */
  watch?: boolean
}

/**
 * Tells the other llamagate processes on the same models folder that a model changed, and hears them:
 * every commit or delete replaces `<changes>/<key>`; a watcher (inotify, one folder, not recursive) hears it
 * on this host at once, and a poll of the markers' identity (inode, mtime, size) every couple of seconds hears
 * it from other hosts. So `llamagate import` while the server runs, or another replica's pull, shows up in
 * /api/tags without the server ever reading the disk per request.
 */
export class ChangeFeed {
  private watcher: FSWatcher | null = null
  private poller: NodeJS.Timeout | null = null
  private seen = new Map<string, string>()
  private polling = false
  private readonly pollMs: number
  private readonly useWatcher: boolean

  constructor (readonly dir: string, options: ChangeFeedOptions = {}) {
    this.pollMs = options.pollMs ?? 2000
    this.useWatcher = options.watch ?? true
  }

  async notify (key: string): Promise<void> {
    await mkdir(this.dir, { recursive: true })
    // Written aside and renamed over: a new file each time, which a poller tells from the last one even when
    // two changes fall in the same tick of the file system's clock.
    const temporary = join(this.dir, `.${key}.${process.pid}.${Date.now()}.tmp`)
    await writeFile(temporary, `${process.pid} ${new Date().toISOString()}\n`)
    await rename(temporary, join(this.dir, key))
  }

  /**
   * Calls `onChange` with the key of each model another process (or this one) changed.
   * @returns false when the platform cannot watch (then only the poll, if any, hears other processes)
   */
  async watch (onChange: (key: string) => void, onError: (err: Error) => void): Promise<boolean> {
    await mkdir(this.dir, { recursive: true })
    if (this.pollMs > 0) {
      await this.poll(null)
      this.poller = setInterval(() => {
        // A slow volume: one look at a time.
        if (this.polling) return
        this.polling = true
        void this.poll(onChange).finally(() => { this.polling = false })
      }, this.pollMs).unref()
    }
    if (!this.useWatcher) return this.pollMs > 0
    try {
      this.watcher = watch(this.dir, { persistent: false }, (_event, filename) => {
        // Dot names are notes being written, not markers.
        if (filename && !filename.toString().startsWith('.')) onChange(filename.toString())
      })
      this.watcher.on('error', onError)
      return true
    } catch (err) {
      onError(err as Error)
      return this.pollMs > 0
    }
  }

  close (): void {
    this.watcher?.close()
    this.watcher = null
    if (this.poller) clearInterval(this.poller)
    this.poller = null
  }

  /** Reports the markers that are new or replaced since the last look (none on the first: `onChange` null). */
  private async poll (onChange: ((key: string) => void) | null): Promise<void> {
    let names: string[]
    try {
      names = await readdir(this.dir)
    } catch {
      return
    }
    const next = new Map<string, string>()
    for (const name of names) {
      if (name.startsWith('.')) continue
      const info = await stat(join(this.dir, name)).catch(() => null)
      if (info === null) continue
      const identity = `${info.ino}:${info.mtimeMs}:${info.size}`
      next.set(name, identity)
      if (onChange !== null && this.seen.get(name) !== identity) onChange(name)
    }
    this.seen = next
  }
}
