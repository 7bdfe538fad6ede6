import { useCallback, useEffect, useState } from 'preact/hooks'
import { getJson } from './api.js'
import { formatSeconds } from './format.js'
import type { UsageTotals } from '../../usage/usage-book.js'

// The server's own type (a type only: nothing of the server is bundled into the page).
type Totals = UsageTotals

/** One key's usage as GET /api/usage answers it. */
export interface KeyUsage {
  key: string
  today: { date: string, tokens: number }
  limits: { tokens_per_day?: number, requests_per_minute?: number, concurrent?: number } | null
  models: Array<Totals & { model: string }>
  totals: Totals
}

function count (n: number): string {
  return n.toLocaleString('en-US')
}

/** Today's tokens against the key's daily limit, as a bar when there is one. */
function Today ({ usage }: { usage: KeyUsage }) {
  const limit = usage.limits?.tokens_per_day
  if (limit === undefined) {
    return <p class="usage-today">{count(usage.today.tokens)} tokens today ({usage.today.date}, UTC); no daily limit</p>
  }
  const percent = Math.min(100, Math.floor(usage.today.tokens / limit * 100))
  return (
    <div class="usage-today">
      <p id="today-label">{count(usage.today.tokens)} of {count(limit)} tokens today ({usage.today.date}, UTC): {percent}%</p>
      <progress max={limit} value={Math.min(usage.today.tokens, limit)} aria-labelledby="today-label" />
    </div>
  )
}

function row (totals: Totals) {
  return (
    <>
      <td>{count(totals.requests)}</td>
      <td>{count(totals.prompt_tokens)}</td>
      <td>{count(totals.cached_tokens)}</td>
      <td>{count(totals.generated_tokens)}</td>
      <td>{formatSeconds(totals.queue_ms)}</td>
      <td>{formatSeconds(totals.runtime_ms)}</td>
    </>
  )
}

/** What the key this page uses has used (GET /api/usage): today's tokens against its limit, and per model. */
export function UsageView () {
  const [usage, setUsage] = useState<KeyUsage | null>(null)
  const [problem, setProblem] = useState<string | null>(null)
  const refresh = useCallback(async () => {
    try {
      const { keys } = await getJson<{ keys: KeyUsage[] }>('/api/usage')
      setUsage(keys[0] ?? null)
      setProblem(null)
    } catch (err) {
      setProblem(`Could not read the usage: ${err instanceof Error ? err.message : String(err)}`)
    }
  }, [])
  useEffect(() => { void refresh() }, [refresh])

  return (
    <div class="models-view usage-view">
      <section aria-labelledby="usage-heading">
        <div class="section-head">
          <h2 id="usage-heading">Usage</h2>
          <button type="button" onClick={() => { void refresh() }}>Refresh</button>
        </div>
        {problem ? <p class="problem" role="alert">{problem}</p> : null}
        {usage === null
          ? (problem ? null : <p class="empty">Reading the usage…</p>)
          : <>
              <p>{usage.key === 'anonymous' ? 'Counted without an API key (keys are off).' : <>API key <strong>{usage.key}</strong></>}</p>
              <Today usage={usage} />
              {usage.models.length === 0
                ? <p class="empty">No requests counted yet.</p>
                : <div class="table-wrap"><table>
                    <caption class="visually-hidden">Usage by model since counting began</caption>
                    <thead><tr>
                      <th scope="col">Model</th><th scope="col">Requests</th><th scope="col">Prompt tokens</th><th scope="col">Cached</th>
                      <th scope="col">Generated</th><th scope="col">Waiting</th><th scope="col">Running</th>
                    </tr></thead>
                    <tbody>
                      {usage.models.map((m) => <tr key={m.model}><th scope="row">{m.model}</th>{row(m)}</tr>)}
                    </tbody>
                    {usage.models.length > 1
                      ? <tfoot><tr><th scope="row">All models</th>{row(usage.totals)}</tr></tfoot>
                      : null}
                  </table></div>}
            </>}
      </section>
    </div>
  )
}
