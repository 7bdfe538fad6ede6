import { randomBytes } from 'node:crypto'
import { appendFile, copyFile, mkdir, open, readdir, readFile, rm, truncate } from 'node:fs/promises'
import { join } from 'node:path'
import type { PriorityRule } from '../../core/base/priority.js'
import type { KeyLimits, Scope } from '../../core/base/grant.js'
import { writeWhole } from '../../core/base/write-whole.js'

export type BatchStatus = 'validating' | 'failed' | 'in_progress' | 'finalizing' | 'completed' | 'expired' | 'cancelling' | 'cancelled'

/** OpenAI's batch object, as `/v1/batches` answers it. */
export interface BatchObject {
  id: string
  object: 'batch'
  endpoint: string
  errors: { object: 'list', data: Array<{ code: string, message: string, param: string | null, line: number | null }> } | null
  input_file_id: string
  completion_window: string
  status: BatchStatus
  output_file_id: string | null
  error_file_id: string | null
  created_at: number
  in_progress_at: number | null
  expires_at: number
  finalizing_at: number | null
  completed_at: number | null
  failed_at: number | null
  expired_at: number | null
  cancelling_at: number | null
  cancelled_at: number | null
  request_counts: { total: number, completed: number, failed: number }
  metadata: Record<string, string> | null
}

/** The credential a batch's requests run under: its key's grant when it was made (null: keys were off). */
export interface GrantSnapshot {
  name: string
  scopes: Scope[]
  models: string[]
  limits: KeyLimits
  cacheGroup: string | null
  priority?: PriorityRule
}

/** A batch and what it runs as: whose it is, and (Anthropic's Message Batches) the API it was made through. */
export interface BatchRecord { batch: BatchObject, owner: string | null, grant: GrantSnapshot | null, api: 'openai' | 'anthropic' }

/** A line of a batch's results: the request it answers (`custom_id`), and the whole line as written. */
export type ResultFile = 'output' | 'errors'

const ID = /^batch_[0-9a-f]{24}$/

/**
 * The batches on disk, one folder each under `dir`: `batch.json` (the record, written whole), `input.jsonl` (the
 * input file as it was when the batch was made: deleting the file later changes nothing), and the results as they
 * come, `output.jsonl` and `errors.jsonl`, a line per request appended whole. A crash mid-append leaves a partial
 * last line: `load` cuts it off, so that no half-written line is ever read, and the request it was for runs again.
 */
export class BatchStore {
  constructor (private readonly dir: string) {}

  static newId (): string { return `batch_${randomBytes(12).toString('hex')}` }

  /**
   * Every batch on disk, each with the custom_ids its results already hold and how many lines each file has (partial
   * lines cut off first).
   */
  async load (): Promise<Array<{ record: BatchRecord, done: Set<string>, lines: Record<ResultFile, number> }>> {
    await mkdir(this.dir, { recursive: true })
    const out: Array<{ record: BatchRecord, done: Set<string>, lines: Record<ResultFile, number> }> = []
    for (const id of (await readdir(this.dir)).filter((n) => ID.test(n))) {
      let record: BatchRecord
      try {
        record = JSON.parse(await readFile(join(this.dir, id, 'batch.json'), 'utf8')) as BatchRecord
      } catch {
        continue
      }
      const done = new Set<string>()
      const lines = { output: 0, errors: 0 }
      for (const which of ['output', 'errors'] as const) {
        const read = await this.repaired(id, which)
        lines[which] = read.lines
        for (const customId of read.ids) done.add(customId)
      }
      out.push({ record, done, lines })
    }
    return out
  }

  /** Makes the folder of a new batch, with its input copied in, and writes its record. */
  async create (record: BatchRecord, inputPath: string): Promise<void> {
    await mkdir(join(this.dir, record.batch.id), { recursive: true })
    await copyFile(inputPath, this.inputPath(record.batch.id))
    await this.save(record)
  }

  async save (record: BatchRecord): Promise<void> {
    await writeWhole(join(this.dir, record.batch.id, 'batch.json'), JSON.stringify(record))
  }

  inputPath (id: string): string { return join(this.dir, id, 'input.jsonl') }
  resultPath (id: string, which: ResultFile): string { return join(this.dir, id, `${which}.jsonl`) }

  /** Appends one whole line to a batch's results. */
  async append (id: string, which: ResultFile, line: unknown): Promise<void> {
    await appendFile(this.resultPath(id, which), `${JSON.stringify(line)}\n`)
  }

  /** Empties a batch's results (a validation that runs again after a crash writes its lines anew). */
  async clear (id: string, which: ResultFile): Promise<void> {
    await rm(this.resultPath(id, which), { force: true })
  }

  /** Makes sure a results file exists (an empty one where no line was written), for its adoption as a file. */
  async touch (id: string, which: ResultFile): Promise<void> {
    await (await open(this.resultPath(id, which), 'a')).close()
  }

  /** The custom_ids of a results file's whole lines; a partial last line (a crash mid-append) is cut off the file. */
  private async repaired (id: string, which: ResultFile): Promise<{ ids: string[], lines: number }> {
    let text: string
    try {
      text = await readFile(this.resultPath(id, which), 'utf8')
    } catch {
      return { ids: [], lines: 0 }
    }
    const whole = text.lastIndexOf('\n') + 1
    if (whole < text.length) await truncate(this.resultPath(id, which), Buffer.byteLength(text.slice(0, whole)))
    const ids: string[] = []
    let lines = 0
    for (const line of text.slice(0, whole).split('\n')) {
      if (line === '') continue
      lines++
      try {
        const { custom_id: customId, error } = JSON.parse(line) as { custom_id?: unknown, error?: { code?: unknown } | null }
        // A bad line of the input (a custom_id used twice) answers no request.
        if (typeof customId === 'string' && error?.code !== 'invalid_request') ids.push(customId)
      } catch { /* whole lines only are written: one that does not read is not ours */ }
    }
    return { ids, lines }
  }
}
