import { rm, stat, statfs } from 'node:fs/promises'
import { join } from 'node:path'
import { ClientGoneError, ConflictError, GatewayError } from '../../core/base/errors.js'
import { EventHub } from '../../core/base/event-hub.js'
import { parseModelName } from '../../core/base/model-name.js'
import { formatBytes } from '../../core/base/units.js'
import type { ManifestFile } from '../storage/manifest.js'
import type { ModelStore } from '../storage/model-store.js'
import type { ModelWriter } from '../storage/model-writer.js'
import { downloadFile, type FileProgress } from './download-file.js'
import { planFiles } from './file-plan.js'
import type { HubClient, HubFile } from './hub-client.js'
import type { PullEvents } from './pull-events.js'
import { pullFromSource, type ModelSourceRegistry } from './model-source-pull.js'
import type { ModelSourceSpec } from '../../core/base/model-sources.js'

/** One event of a pull stream (rest-interface §2.6, contract: Pull). */
export interface PullEvent { status: string, digest?: string, total?: number, completed?: number }
type Listener = (event: PullEvent) => void

const PROGRESS_INTERVAL_MS = 100
/** How often a pull waiting for another process says so again: a line well within proxies' idle timeouts. */
const WAIT_STATUS_INTERVAL_MS = 5000

/** A pull in progress, shared by every request for the same model. */
class PullJob {
  readonly listeners = new Set<Listener>()
  readonly controller = new AbortController()
  /** What a late subscriber needs to catch up: the first event and the latest progress. */
  readonly replay: PullEvent[] = []
  done!: Promise<void>

  emit (event: PullEvent): void {
    // A status said again (a file's progress, the wait for another process) replaces its last report.
    const at = this.replay.findIndex((e) => e.status === event.status)
    if (at === -1) this.replay.push(event)
    else this.replay[at] = event
    for (const listener of this.listeners) listener(event)
  }
}

/**
 * Brings `<owner>/<name>[:tag]` from the hub onto the disk: plans the files, downloads them resumably and
 * verified under the store's writer lock, and commits the model. Two pulls of one model share the job; the
 * job stops when its last listener leaves (the partial data stays for next time).
 */
export class PullService {
  private readonly jobs = new Map<string, PullJob>()
  /** Bytes received, retries and failed pulls, for observers (metrics); the hub client's retries are told here too. */
  readonly events = new EventHub<PullEvents>()

  constructor (private readonly deps: {
    store: ModelStore
    client: HubClient
    /** Makes the GGUF of a SafeTensors model once it is whole (the converter). */
    convert?: (name: string, dtype: string | undefined, emit: Listener, signal: AbortSignal) => Promise<void>
    /** Plugins' model sources: a name one claims is pulled from it, not from the hub. */
    sources?: ModelSourceRegistry
  }) {}

  /** Resolves when the model is whole; events go to `listener`. Leaving (signal) cancels if nobody else waits. */
  async pull (name: string, listener: Listener, signal?: AbortSignal, dtype?: string): Promise<void> {
    const { id, tag } = parseModelName(name)
    const source = this.deps.sources?.claimant(name) ?? null
    const key = `${id.toLowerCase()}:${(tag ?? '').toLowerCase()}`
    let job = this.jobs.get(key)
    // A job whose last client just left is still winding down: wait for it, then start afresh from its partial data.
    while (job?.controller.signal.aborted) {
      await job.done.catch(() => {})
      job = this.jobs.get(key)
    }
    if (job) {
      for (const event of job.replay) listener(event)
      job.listeners.add(listener)
    } else {
      job = new PullJob()
      this.jobs.set(key, job)
      // Listening before the job starts: its first event is emitted before anything is awaited.
      job.listeners.add(listener)
      const started = job
      job.done = (source !== null ? this.runSource(started, source, name, id) : this.run(started, id, tag, dtype)).catch((err: unknown) => {
        if (!started.controller.signal.aborted) this.events.emit('failed', err)
        throw err
      }).finally(() => this.jobs.delete(key))
    }
    const leave = (): void => {
      job!.listeners.delete(listener)
      if (job!.listeners.size === 0) job!.controller.abort(new ClientGoneError())
    }
    if (signal?.aborted) leave()
    else signal?.addEventListener('abort', leave, { once: true })
    try {
      await job.done
    } finally {
      signal?.removeEventListener('abort', leave)
      job.listeners.delete(listener)
    }
  }

  private async run (job: PullJob, id: string, tag: string | null, dtype: string | undefined): Promise<void> {
    const { store, client } = this.deps
    const signal = job.controller.signal
    const other = [...this.jobs].find(([k, j]) => j !== job && !j.controller.signal.aborted && k.startsWith(`${id.toLowerCase()}:`))?.[0]
    // Another tag of the model pulled here: waiting would only make the one replace the other.
    if (other !== undefined) throw new ConflictError(`${id} is being pulled with ${other.endsWith(':') ? 'the default tag' : `the tag ${other.slice(id.length + 1)}`}; pull again when that has finished`)
    job.emit({ status: `pulling ${id}` })
    const writer = await this.openWriter(job, id)
    let format: 'gguf' | 'safetensors'
    try {
      const commit = await client.resolveCommit(id, signal)
      const plan = planFiles(id, await client.listFiles(id, commit, signal), tag)
      format = plan.format
      const unchanged = await unchangedFiles(writer.dir, writer.existing?.files ?? [], plan.files)
      const needed = plan.files.filter((f) => !unchanged.has(f.path)).reduce((sum, f) => sum + f.size, 0)
      const fs = await statfs(writer.dir)
      if (needed > fs.bavail * fs.bsize) {
        throw new GatewayError(507, `not enough disk space for ${id}: it needs ${formatBytes(needed)}, ${formatBytes(fs.bavail * fs.bsize)} are free in ${writer.dir}`, { code: 'disk_full' })
      }
      for (const file of plan.files) {
        const status = `downloading ${file.path}`
        if (unchanged.has(file.path)) {
          job.emit({ status, digest: file.path, total: file.size, completed: file.size })
          continue
        }
        let last = 0
        let lastCompleted = -1
        const onProgress = (p: FileProgress): void => {
          const now = Date.now()
          // The first event, the last, and at most one every 100 ms between.
          if (lastCompleted !== -1 && p.completed !== p.total && now - last < PROGRESS_INTERVAL_MS) return
          if (p.completed === lastCompleted) return
          last = now
          lastCompleted = p.completed
          job.emit({ status, digest: file.path, total: p.total, completed: p.completed })
        }
        await downloadFile({
          client, repo: id, commit, file, dir: writer.dir, signal, onProgress,
          onBytes: (count) => this.events.emit('bytes', count),
          onRetry: (reason) => this.events.emit('retry', reason),
        })
      }
      await writer.commit({
        name: id,
        format: plan.format,
        source: { type: 'hub', repository: id, commit },
        files: plan.files.map((f) => ({ name: f.path, size: f.size, sha256: f.sha256 })),
        primary: plan.primary,
        ...(plan.projector !== null ? { projector: plan.projector } : {}),
      })
      // Files of an earlier version that the new manifest no longer names.
      for (const old of writer.existing?.files ?? []) {
        if (!plan.files.some((f) => f.path === old.name)) await rm(join(writer.dir, old.name), { force: true })
      }
    } finally {
      await writer.release()
    }
    // The SafeTensors model is listed (and usable for a later try) even if its conversion fails.
    if (format === 'safetensors' && this.deps.convert) await this.deps.convert(id, dtype, (e) => job.emit(e), signal)
    job.emit({ status: 'success' })
  }

  /** The pull of a name a plugin's model source claims: its file, imported. */
  private async runSource (job: PullJob, source: ModelSourceSpec, name: string, id: string): Promise<void> {
    job.emit({ status: `pulling ${id} from ${source.name}` })
    await pullFromSource(source, name, { store: this.deps.store, signal: job.controller.signal, emit: (e) => job.emit(e) })
    job.emit({ status: 'success' })
  }

  /**
   * The model's writer. Another process pulling (or writing) it is waited for, saying so every few seconds; once
   * it is done, what it committed is found whole and is not downloaded again. If it failed or died, this pull
   * takes over from its partial data. A client leaving gives the wait up, holding nothing.
   */
  private async openWriter (job: PullJob, id: string): Promise<ModelWriter> {
    const say = (): void => job.emit({ status: `waiting for another process pulling ${id}` })
    let timer: NodeJS.Timeout | undefined
    try {
      return await this.deps.store.openWriter(id, {
        wait: true,
        waitMs: Infinity,
        signal: job.controller.signal,
        onWait: () => {
          say()
          timer = setInterval(say, WAIT_STATUS_INTERVAL_MS)
        },
      })
    } finally {
      clearInterval(timer)
    }
  }

  /** True while a pull of the model runs in this process. */
  isPulling (name: string): boolean {
    const id = parseModelName(name).id.toLowerCase()
    return [...this.jobs.keys()].some((k) => k.startsWith(`${id}:`))
  }
}

/**
 * The planned files the committed manifest already has, verified: the same SHA-256 and size as the hub lists,
 * and on disk at that size (the bytes were hashed when they were downloaded, by this process or another).
 */
async function unchangedFiles (dir: string, committed: ManifestFile[], planned: HubFile[]): Promise<Set<string>> {
  const found = new Set<string>()
  for (const old of committed) {
    if (!planned.some((f) => f.path === old.name && f.sha256 !== null && f.sha256 === old.sha256 && f.size === old.size)) continue
    const size = await stat(join(dir, old.name)).then((s) => s.size, () => -1)
    if (size === old.size) found.add(old.name)
  }
  return found
}
