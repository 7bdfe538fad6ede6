import { useState } from 'preact/hooks'
import type { LoadedModel, ModelRecord } from './api.js'
import { formatAgo, formatBytes, formatUntil } from './format.js'

/** A pull in progress or finished: one bar per file, as /api/pull reports them. */
export interface PullState {
  id: number
  model: string
  status: string
  files: Array<{ name: string, total: number, completed: number }>
  done: boolean
  error?: string
  controller: AbortController
}

function PullView ({ pull, onCancel, onDismiss }: { pull: PullState, onCancel: () => void, onDismiss: () => void }) {
  const state = pull.error ? `failed: ${pull.error}` : pull.done ? 'done' : pull.status
  return (
    <div class="pull" role="group" aria-label={`Pull of ${pull.model}`}>
      <p><strong>{pull.model}</strong> <span class="pull-status" role="status">{state}</span></p>
      {pull.files.map((f) => {
        const percent = f.total > 0 ? Math.floor(f.completed / f.total * 100) : 0
        return (
          <div class="file-progress" key={f.name}>
            <span class="file-name">{f.name}</span>
            <progress max={f.total || 1} value={f.completed} aria-label={f.name} />
            <span class="percent">{percent}% · {formatBytes(f.completed)} / {formatBytes(f.total)}</span>
          </div>
        )
      })}
      {pull.done || pull.error
        ? <button type="button" onClick={onDismiss}>Dismiss</button>
        : <button type="button" onClick={onCancel}>Cancel pull</button>}
    </div>
  )
}

/** "local (cpu)", or the upstream and its address: where a loaded model's requests go (`llamagate ps` says the same). */
function whereItRuns (m: LoadedModel): string {
  if (m.where === 'upstream') return `upstream ${m.upstream ?? ''} (${m.remote_host ?? ''})`
  return m.runtime ? `local (${m.runtime})` : 'local'
}

export interface ModelsViewProps {
  models: ModelRecord[]
  /** The first list of models has arrived (before it, an empty list means not known yet). */
  listed: boolean
  capabilities: ReadonlyMap<string, string[]>
  loaded: LoadedModel[]
  pulls: PullState[]
  onPull: (name: string) => void
  onCancelPull: (id: number) => void
  onDismissPull: (id: number) => void
  onUnload: (name: string) => void
  onDelete: (name: string) => void
  onChat: (name: string) => void
  onRefresh: () => void
}

export function ModelsView (props: ModelsViewProps) {
  const [name, setName] = useState('')
  const { capabilities, loaded, pulls } = props
  // /api/tags lists config.yaml's upstreams' models beside the stored ones: they get a section of their own.
  const models = props.models.filter((m) => m.remote_host === undefined)
  const remote = props.models.filter((m) => m.remote_host !== undefined)
  return (
    <div class="models-view">
      <section aria-labelledby="pull-heading">
        <h2 id="pull-heading">Pull a model</h2>
        <form class="pull-form" onSubmit={(e) => { e.preventDefault(); if (name.trim()) { props.onPull(name.trim()); setName('') } }}>
          <label for="pull-name">Model name</label>
          <input id="pull-name" value={name} placeholder="owner/name or owner/name:Q4_K_M" autocomplete="off" spellcheck={false}
            onInput={(e) => setName(e.currentTarget.value)} />
          <button type="submit" class="primary" disabled={name.trim() === ''}>Pull</button>
        </form>
        {pulls.map((p) => <PullView key={p.id} pull={p} onCancel={() => props.onCancelPull(p.id)} onDismiss={() => props.onDismissPull(p.id)} />)}
      </section>

      <section aria-labelledby="loaded-heading">
        <div class="section-head">
          <h2 id="loaded-heading">Loaded models</h2>
          <button type="button" onClick={props.onRefresh}>Refresh</button>
        </div>
        {loaded.length === 0
          ? <p class="empty">None loaded: a model loads on its first request.</p>
          : <div class="table-wrap"><table>
              <thead><tr><th scope="col">Name</th><th scope="col">Size</th><th scope="col">Runs on</th><th scope="col">State</th><th scope="col">Unloads</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
              <tbody>
                {loaded.map((m) => (
                  <tr key={`${m.name}-${m.purpose ?? ''}`}>
                    <th scope="row">{m.name}{m.purpose && m.purpose !== 'generate' ? ` (${m.purpose})` : ''}</th>
                    <td>{m.where === 'upstream' ? '-' : formatBytes(m.size)}</td>
                    <td class="runs-on">{whereItRuns(m)}</td>
                    <td>{m.state ?? 'loaded'}</td>
                    {/* An upstream's model is listed while its requests run; nothing here is there to unload. */}
                    {m.where === 'upstream'
                      ? <><td>when its requests end</td><td /></>
                      : <><td>{formatUntil(m.expires_at)}</td>
                        <td><button type="button" onClick={() => props.onUnload(m.name)} aria-label={`Unload ${m.name}`}>Unload</button></td></>}
                  </tr>
                ))}
              </tbody>
            </table></div>}
      </section>

      <section aria-labelledby="local-heading">
        <h2 id="local-heading">Local models</h2>
        {models.length === 0
          ? <p class="empty" role={props.listed ? undefined : 'status'}>{props.listed ? 'No models yet.' : 'Loading the models…'}</p>
          : <div class="table-wrap"><table>
              <thead><tr><th scope="col">Name</th><th scope="col">Size</th><th scope="col">Capabilities</th><th scope="col">Modified</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
              <tbody>
                {models.map((m) => (
                  <tr key={m.name}>
                    <th scope="row">{m.name}</th>
                    <td>{formatBytes(m.size)}</td>
                    <td>{(capabilities.get(m.name) ?? []).join(', ')}</td>
                    <td>{formatAgo(m.modified_at)}</td>
                    <td><div class="row-actions">
                      <button type="button" onClick={() => props.onChat(m.name)} aria-label={`Chat with ${m.name}`}>Chat</button>
                      <button type="button" class="danger" onClick={() => props.onDelete(m.name)} aria-label={`Delete ${m.name}`}>Delete</button>
                    </div></td>
                  </tr>
                ))}
              </tbody>
            </table></div>}
      </section>

      {remote.length > 0 && (
        <section aria-labelledby="upstream-heading">
          <h2 id="upstream-heading">Upstream models</h2>
          <div class="table-wrap"><table>
            <thead><tr><th scope="col">Name</th><th scope="col">Runs on</th><th scope="col">Name there</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
            <tbody>
              {remote.map((m) => (
                <tr key={m.name}>
                  <th scope="row">{m.name}</th>
                  <td class="runs-on">{m.remote_host}</td>
                  <td>{m.remote_model}</td>
                  <td><button type="button" onClick={() => props.onChat(m.name)} aria-label={`Chat with ${m.name}`}>Chat</button></td>
                </tr>
              ))}
            </tbody>
          </table></div>
        </section>
      )}
    </div>
  )
}
