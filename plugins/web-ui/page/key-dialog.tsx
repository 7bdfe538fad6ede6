import { useEffect, useRef, useState } from 'preact/hooks'

/** Asks for the API key the server wants; kept in this browser (localStorage) once given. */
export function KeyDialog ({ message, onDone }: { message: string, onDone: (key: string | null) => void }) {
  const dialog = useRef<HTMLDialogElement>(null)
  const [key, setKey] = useState('')
  useEffect(() => {
    const el = dialog.current
    if (el && !el.open) el.showModal()
  }, [])
  return (
    <dialog ref={dialog} class="key-dialog" aria-labelledby="key-heading" aria-describedby="key-reason"
      onCancel={(e) => { e.preventDefault(); onDone(null) }}>
      <form method="dialog" onSubmit={(e) => { e.preventDefault(); onDone(key.trim() || null) }}>
        <h2 id="key-heading">API key needed</h2>
        <p id="key-reason">This server wants an API key ({message}). It is kept in this browser and sent with each request.</p>
        <label for="api-key">API key</label>
        <input id="api-key" type="password" autocomplete="current-password" value={key} autofocus
          onInput={(e) => setKey(e.currentTarget.value)} />
        <div class="actions">
          <button type="submit" class="primary" disabled={key.trim() === ''}>Save key</button>
          <button type="button" onClick={() => onDone(null)}>Cancel</button>
        </div>
      </form>
    </dialog>
  )
}
