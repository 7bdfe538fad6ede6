import type { ChatOptions, Conversation } from './conversations.js'
import { SAMPLE_TOOLS } from './tools.js'

const OPTION_FIELDS: Array<{ key: keyof ChatOptions, label: string, step: string, min: string, max?: string }> = [
  { key: 'temperature', label: 'Temperature', step: '0.05', min: '0', max: '2' },
  { key: 'top_p', label: 'Top p', step: '0.05', min: '0', max: '1' },
  { key: 'num_ctx', label: 'Context (num_ctx)', step: '256', min: '256' },
  { key: 'max_tokens', label: 'Max tokens', step: '1', min: '1' },
  { key: 'seed', label: 'Seed', step: '1', min: '0' },
]

export function Settings ({ conversation, toolsProblem, onChange }: { conversation: Conversation, toolsProblem: string | null, onChange: (c: Partial<Conversation>) => void }) {
  return (
    <details class="settings">
      <summary>System prompt, options and tools</summary>
      <label for="system-prompt">System prompt</label>
      <textarea id="system-prompt" rows={3} value={conversation.system}
        onInput={(e) => onChange({ system: e.currentTarget.value })} />
      <div class="options">
        {OPTION_FIELDS.map((f) => (
          <div class="option" key={f.key}>
            <label for={`option-${f.key}`}>{f.label}</label>
            <input id={`option-${f.key}`} type="number" inputMode="decimal" step={f.step} min={f.min} max={f.max}
              placeholder="default" value={conversation.options[f.key] ?? ''}
              onInput={(e) => {
                const text = e.currentTarget.value
                const value = text === '' ? undefined : Number(text)
                const options = { ...conversation.options }
                if (value === undefined || Number.isNaN(value)) delete options[f.key]
                else options[f.key] = value
                onChange({ options })
              }} />
          </div>
        ))}
      </div>
      <div class="tools-field">
        <label for="tools">Tools (JSON array of function definitions; the model may call them and you answer with each result)</label>
        <textarea id="tools" rows={conversation.tools ? 8 : 2} spellcheck={false} value={conversation.tools ?? ''}
          placeholder='[{"type": "function", "function": {"name": "get_weather", "parameters": {...}}}]'
          aria-invalid={toolsProblem !== null} aria-describedby={toolsProblem !== null ? 'tools-problem' : undefined}
          onInput={(e) => onChange({ tools: e.currentTarget.value })} />
        {toolsProblem !== null ? <p id="tools-problem" class="error" role="alert">{toolsProblem}</p> : null}
        {!conversation.tools ? <button type="button" onClick={() => onChange({ tools: SAMPLE_TOOLS })}>Insert an example</button> : null}
      </div>
    </details>
  )
}
