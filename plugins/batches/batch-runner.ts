import { randomBytes } from 'node:crypto'
import { readFile, rm, stat } from 'node:fs/promises'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Logger } from '../../core/base/logger.js'
import { readLines, type BatchLine } from './batch-lines.js'
import type { BatchRecord, BatchStatus, BatchStore, ResultFile } from './batch-store.js'
import type { FileStore } from './file-store.js'

/** A request's answer as the gateway gave it. */
export interface Answer { status: number, body: unknown, retryAfterSeconds?: number }

export interface RunnerDeps {
  store: BatchStore
  files: FileStore
  /** Sends one request of the batch through the gateway, as the batch's key, as background work. */
  execute(record: BatchRecord, line: BatchLine, signal: AbortSignal): Promise<Answer>
  /** How many of a batch's requests run at once. */
  concurrency: number
  /** The most requests one batch may hold. */
  maxRequests: number
  log: Pick<Logger, 'info' | 'warn'>
}

const TERMINAL: readonly BatchStatus[] = ['failed', 'completed', 'expired', 'cancelled']
// A refusal that says to come back (a key's rate limit, a slot taken back for a person, no room yet) is sent again
// after its Retry-After, within these bounds, until the batch expires or is cancelled.
const RETRY_MIN_MS = 250
const RETRY_MAX_MS = 30_000

interface Active { record: BatchRecord, done: Set<string>, counts: { output: number, errors: number } }

const now = (): number => Math.floor(Date.now() / 1000)

/**
 * Runs the batches, one at a time in the order they were made, each request once into its results: validated from
 * the batch's copy of its input (bad lines to the error file), then its requests grouped by model (a batch across
 * three models loads each once, not per request), `concurrency` at a time, each line appended whole as its answer
 * comes, then finalized (its results become files). Everything it knows is on disk as it goes (batch-store.ts):
 * started again after a crash it goes on where it stopped, running only the requests with no line yet.
 */
export class BatchRunner {
  private readonly queue: Active[] = []
  private readonly active = new Map<string, Active>()
  private running: Promise<void> | null = null
  private readonly closing = new AbortController()

  constructor (private readonly deps: RunnerDeps) {}

  /** Takes up the batches found on disk: those not over go on where they stopped. */
  resume (loaded: Array<{ record: BatchRecord, done: Set<string>, lines: Record<ResultFile, number> }>): void {
    for (const { record, done, lines } of loaded.sort((a, b) => a.record.batch.created_at - b.record.batch.created_at)) {
      if (TERMINAL.includes(record.batch.status)) continue
      // The counts are what the results hold: the record on disk may be a second behind them.
      record.batch.request_counts.completed = lines.output
      record.batch.request_counts.failed = lines.errors
      this.enqueue({ record, done, counts: { ...lines } })
    }
  }

  /** A batch just made: run it in its turn. */
  submit (record: BatchRecord): void {
    this.enqueue({ record, done: new Set(), counts: { output: 0, errors: 0 } })
  }

  /** The live record of a batch being run (its counts up to date), or null. */
  live (id: string): BatchRecord | null {
    return this.active.get(id)?.record ?? null
  }

  /** Cancels a batch: no request of it is sent from now on; those running finish, the rest are accounted as cancelled. */
  async cancel (record: BatchRecord): Promise<BatchRecord> {
    const live = this.active.get(record.batch.id)?.record ?? record
    if (TERMINAL.includes(live.batch.status) || live.batch.status === 'cancelling') return live
    live.batch.status = 'cancelling'
    live.batch.cancelling_at = now()
    await this.deps.store.save(live)
    return live
  }

  /** Stops taking requests; resolves once those running have answered (what is left runs on after a restart). */
  async close (): Promise<void> {
    this.closing.abort()
    await this.running
  }

  private enqueue (active: Active): void {
    this.active.set(active.record.batch.id, active)
    this.queue.push(active)
    this.running ??= this.loop().finally(() => { this.running = null })
  }

  private async loop (): Promise<void> {
    for (let next = this.queue.shift(); next !== undefined && !this.closing.signal.aborted; next = this.queue.shift()) {
      try {
        await this.run(next)
      } catch (err) {
        this.deps.log.warn({ err, batch: next.record.batch.id }, 'a batch stopped with an error; it goes on after a restart')
      }
      if (TERMINAL.includes(next.record.batch.status)) this.active.delete(next.record.batch.id)
    }
  }

  private async run (active: Active): Promise<void> {
    const { record } = active
    const { batch } = record
    const { store } = this.deps
    const text = await readFile(store.inputPath(batch.id), 'utf8')
    const read = readLines(text, batch.endpoint, this.deps.maxRequests)
    // Validated once (a batch cancelled before its turn too, so that its results account for every line).
    if (batch.status === 'validating' || batch.in_progress_at === null) {
      if (read.fatal !== null) return await this.finish(active, 'failed', read.fatal)
      // Written anew whole: a validation cut short by a crash left part of its lines.
      await store.clear(batch.id, 'errors')
      active.counts.errors = 0
      for (const bad of read.errors) await this.write(active, 'errors', bad.customId, null, { code: 'invalid_request', message: bad.message })
      batch.request_counts.total = read.requests.length + read.errors.length
      if (batch.status === 'validating') batch.status = 'in_progress'
      batch.in_progress_at = now()
      await store.save(record)
    }
    if (batch.status === 'in_progress') {
      const left = read.requests.filter((r) => !active.done.has(r.customId))
      await this.runRequests(active, byModel(left))
    }
    if (this.closing.signal.aborted) return
    // What never ran: every request of the batch is accounted for in its results.
    const status = batch.status as BatchStatus
    const over = status === 'cancelling' ? 'cancelled' : Date.now() >= batch.expires_at * 1000 ? 'expired' : 'completed'
    if (over !== 'completed') {
      const code = over === 'cancelled' ? 'batch_cancelled' : 'batch_expired'
      for (const request of read.requests.filter((r) => !active.done.has(r.customId))) {
        await this.write(active, 'errors', request.customId, null, { code, message: over === 'cancelled' ? 'the batch was cancelled before this request ran' : 'the batch expired before this request ran' })
      }
    }
    await this.finish(active, over, null)
  }

  /** Runs the requests, `concurrency` at a time, until none is left, the batch is cancelled or expires, or the runner closes. */
  private async runRequests (active: Active, requests: BatchLine[]): Promise<void> {
    const { batch } = active.record
    let next = 0
    let lastSave = Date.now()
    const worker = async (): Promise<void> => {
      for (;;) {
        if (this.closing.signal.aborted || batch.status !== 'in_progress' || Date.now() >= batch.expires_at * 1000) return
        const request = requests[next++]
        if (request === undefined) return
        const answer = await this.answer(active, request)
        if (answer === null) return
        const ok = answer.status >= 200 && answer.status < 300
        await this.write(active, ok ? 'output' : 'errors', request.customId, { status_code: answer.status, request_id: `req_${randomBytes(12).toString('hex')}`, body: answer.body }, null)
        if (Date.now() - lastSave > 1000) {
          lastSave = Date.now()
          await this.deps.store.save(active.record)
        }
      }
    }
    await Promise.all(Array.from({ length: this.deps.concurrency }, worker))
  }

  /** One request's answer, sent again while it is refused for now (429, 503); null when the batch stopped meanwhile. */
  private async answer (active: Active, request: BatchLine): Promise<Answer | null> {
    const { batch } = active.record
    for (;;) {
      const answer = await this.deps.execute(active.record, request, this.closing.signal)
      if (answer.status !== 429 && answer.status !== 503) return answer
      if (this.closing.signal.aborted || batch.status !== 'in_progress') return null
      const wait = Math.min(RETRY_MAX_MS, Math.max(RETRY_MIN_MS, (answer.retryAfterSeconds ?? 1) * 1000))
      if (Date.now() + wait >= batch.expires_at * 1000) return answer
      await sleep(wait, undefined, { signal: this.closing.signal }).catch(() => {})
    }
  }

  /** Appends one result line, whole, and counts it. */
  private async write (active: Active, which: ResultFile, customId: string | null, response: unknown, error: unknown): Promise<void> {
    await this.deps.store.append(active.record.batch.id, which, { id: `batch_req_${randomBytes(12).toString('hex')}`, custom_id: customId, response, error })
    // A bad line's custom_id may be a good line's (a second use of it): only an answer, or an account of why none
    // came, marks a request done.
    if (customId !== null && !isBadLine(error)) active.done.add(customId)
    active.counts[which]++
    active.record.batch.request_counts.completed = active.counts.output
    active.record.batch.request_counts.failed = active.counts.errors
  }

  /** Ends a batch: its results become its output and error files (each where it has lines), then its status. */
  private async finish (active: Active, status: 'failed' | 'completed' | 'expired' | 'cancelled', failure: string | null): Promise<void> {
    const { record } = active
    const { batch } = record
    const { store, files } = this.deps
    if (status !== 'failed') {
      batch.status = 'finalizing'
      batch.finalizing_at ??= now()
      await store.save(record)
      const hex = batch.id.slice('batch_'.length)
      for (const [which, field] of [['output', 'output_file_id'], ['errors', 'error_file_id']] as const) {
        const id = `file-${hex}-${which}`
        await store.touch(batch.id, which)
        const path = store.resultPath(batch.id, which)
        if (!files.has(id) && (await stat(path)).size === 0) { await rm(path, { force: true }); continue }
        batch[field] = (await files.adopt(id, record.owner, `${batch.id}_${which}.jsonl`, 'batch_output', path)).id
      }
    } else {
      batch.errors = { object: 'list', data: [{ code: 'invalid_input_file', message: failure ?? 'the batch failed', param: 'input_file_id', line: null }] }
    }
    batch.status = status
    const at = now()
    if (status === 'completed') batch.completed_at = at
    else if (status === 'failed') batch.failed_at = at
    else if (status === 'expired') batch.expired_at = at
    else batch.cancelled_at = at
    await store.save(record)
    this.deps.log.info({ batch: batch.id, status, ...batch.request_counts }, `batch ${batch.id} ${status}`)
  }
}

/** The requests grouped by the model they name, groups in the order each model first appears. */
function byModel (requests: BatchLine[]): BatchLine[] {
  const groups = new Map<string, BatchLine[]>()
  for (const request of requests) {
    const model = String(request.body.model)
    const group = groups.get(model)
    if (group) group.push(request)
    else groups.set(model, [request])
  }
  return [...groups.values()].flat()
}

/** A line of the error file written for a line of the input that is no request (its custom_id may be another's). */
export function isBadLine (error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === 'invalid_request'
}
