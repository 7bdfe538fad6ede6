import { useCallback, useEffect, useState } from 'preact/hooks'
import { call, getJson, sendJson } from './api.js'
import { formatAgo } from './format.js'

/** A batch as OpenAI's /v1/batches lists it (the fields the page shows). */
interface OpenAiBatch {
  id: string
  endpoint: string
  status: string
  created_at: number
  output_file_id: string | null
  error_file_id: string | null
  request_counts: { total: number, completed: number, failed: number }
}

/** A batch as Anthropic's /v1/messages/batches lists it. */
interface MessageBatch {
  id: string
  processing_status: 'in_progress' | 'canceling' | 'ended'
  created_at: string
  results_url: string | null
  request_counts: { processing: number, succeeded: number, errored: number, canceled: number, expired: number }
}

/** A result file of a batch: where to read it, and the name it is saved under. */
interface ResultFile { label: string, path: string, name: string }

/** One row: either kind of batch, as the page shows it. */
interface BatchRow {
  id: string
  endpoint: string
  status: string
  created: number
  total: number
  done: number
  failed: number
  over: boolean
  cancelPath: string | null
  files: ResultFile[]
}

const OVER = ['completed', 'failed', 'expired', 'cancelled']

function openAiRow (b: OpenAiBatch): BatchRow {
  const { total, completed, failed } = b.request_counts
  const over = OVER.includes(b.status)
  const files: ResultFile[] = []
  if (b.output_file_id) files.push({ label: 'Results', path: `/v1/files/${encodeURIComponent(b.output_file_id)}/content`, name: `${b.id}_output.jsonl` })
  if (b.error_file_id) files.push({ label: 'Errors', path: `/v1/files/${encodeURIComponent(b.error_file_id)}/content`, name: `${b.id}_errors.jsonl` })
  return {
    id: b.id, endpoint: b.endpoint, status: b.status, created: b.created_at * 1000, total, done: completed + failed, failed, over, files,
    cancelPath: over || b.status === 'cancelling' ? null : `/v1/batches/${encodeURIComponent(b.id)}/cancel`,
  }
}

function messageRow (b: MessageBatch): BatchRow {
  const { processing, succeeded, errored, canceled, expired } = b.request_counts
  const over = b.processing_status === 'ended'
  const failed = errored + canceled + expired
  return {
    id: b.id, endpoint: '/v1/messages', status: b.processing_status, created: Date.parse(b.created_at), total: processing + succeeded + failed,
    done: succeeded + failed, failed, over,
    cancelPath: over || b.processing_status === 'canceling' ? null : `/v1/messages/batches/${encodeURIComponent(b.id)}/cancel`,
    // The results' own path on this server, whatever host the answer named.
    files: b.results_url ? [{ label: 'Results', path: `/v1/messages/batches/${encodeURIComponent(b.id)}/results`, name: `${b.id}_results.jsonl` }] : [],
  }
}

/** Saves a result file: read with the key (a plain link would go without it), then handed to the browser as a download. */
async function download (file: ResultFile): Promise<void> {
  const blob = await (await call(file.path)).blob()
  const href = URL.createObjectURL(blob)
  const link = document.createElement('a')
  link.href = href
  link.download = file.name
  link.click()
  setTimeout(() => URL.revokeObjectURL(href), 60_000)
}

function Progress ({ row }: { row: BatchRow }) {
  const label = `progress-${row.id}`
  const text = row.total === 0 ? 'no requests counted yet' : `${row.done.toLocaleString('en-US')} of ${row.total.toLocaleString('en-US')}${row.failed > 0 ? ` (${row.failed.toLocaleString('en-US')} failed)` : ''}`
  return (
    <div class="batch-progress">
      <progress max={Math.max(row.total, 1)} value={row.done} aria-labelledby={label} />
      <span id={label}>{text}</span>
    </div>
  )
}

/** How often the list is read again while a batch runs. */
const FOLLOW_MS = 1000

/**
 * The batches of the key this page uses (OpenAI's Batch API and Anthropic's Message Batches): each one's status and
 * progress as a bar, followed while any runs, its result files to download, and a cancel for those running.
 */
export function BatchesView () {
  const [rows, setRows] = useState<BatchRow[] | null>(null)
  const [problem, setProblem] = useState<string | null>(null)
  const refresh = useCallback(async () => {
    try {
      const [openai, anthropic] = await Promise.all([
        getJson<{ data: OpenAiBatch[] }>('/v1/batches?limit=100'),
        getJson<{ data: MessageBatch[] }>('/v1/messages/batches?limit=100'),
      ])
      setRows([...openai.data.map(openAiRow), ...anthropic.data.map(messageRow)].sort((a, b) => b.created - a.created))
      setProblem(null)
    } catch (err) {
      setProblem(`Could not list the batches: ${err instanceof Error ? err.message : String(err)}`)
    }
  }, [])
  useEffect(() => { void refresh() }, [refresh])
  const running = rows?.some((r) => !r.over) ?? false
  useEffect(() => {
    if (!running) return
    const timer = setInterval(() => { void refresh() }, FOLLOW_MS)
    return () => clearInterval(timer)
  }, [running, refresh])

  const act = async (what: string, action: () => Promise<unknown>): Promise<void> => {
    try {
      await action()
      await refresh()
    } catch (err) {
      setProblem(`Could not ${what}: ${err instanceof Error ? err.message : String(err)}`)
    }
  }

  return (
    <div class="models-view batches-view">
      <section aria-labelledby="batches-heading">
        <div class="section-head">
          <h2 id="batches-heading">Batches</h2>
          <button type="button" onClick={() => { void refresh() }}>Refresh</button>
        </div>
        {problem ? <p class="problem" role="alert">{problem}</p> : null}
        {rows === null
          ? (problem ? null : <p class="empty">Reading the batches…</p>)
          : rows.length === 0
            ? <p class="empty">No batches yet. Send one with <code>llamagate batch submit</code>, OpenAI's Batch API or Anthropic's Message Batches.</p>
            : <div class="table-wrap"><table>
                <caption class="visually-hidden">This key's batches, newest first</caption>
                <thead><tr>
                  <th scope="col">Batch</th><th scope="col">Endpoint</th><th scope="col">Status</th><th scope="col">Progress</th>
                  <th scope="col">Created</th><th scope="col">Files</th>
                </tr></thead>
                <tbody>
                  {rows.map((r) => (
                    <tr key={r.id}>
                      <th scope="row"><code>{r.id}</code></th>
                      <td>{r.endpoint}</td>
                      <td>{r.status}</td>
                      <td><Progress row={r} /></td>
                      <td>{formatAgo(r.created)}</td>
                      <td class="batch-actions">
                        {r.files.map((f) => (
                          <button type="button" key={f.path} aria-label={`Download ${f.label.toLowerCase()} of ${r.id}`} onClick={() => { void act('download the file', () => download(f)) }}>{f.label}</button>
                        ))}
                        {r.cancelPath !== null
                          ? <button type="button" aria-label={`Cancel ${r.id}`} onClick={() => { void act('cancel the batch', () => sendJson('POST', r.cancelPath!, {})) }}>Cancel</button>
                          : null}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table></div>}
      </section>
    </div>
  )
}
