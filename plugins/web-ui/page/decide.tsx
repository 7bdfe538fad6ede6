import { useState } from 'preact/hooks'
import { sendJson, type ModelRecord } from './api.js'
import type { SystemOneAnswer } from '../../decisions/decision-math.js'

type QuestionType = 'noul' | 'choice' | 'score'
interface Draft { type: QuestionType, instructions: string, options: string }
interface Reply { model: string, answers: Record<string, SystemOneAnswer>, usage: { input_tokens: number } }

const TYPE_NAMES: Record<QuestionType, string> = { noul: 'Yes or no', choice: 'Choice', score: 'Score' }

/** A question as /v1/systemone takes it: a choice's options as keys, a score's as levels from 0. */
function asked (d: Draft): Record<string, unknown> {
  const options = d.options.split(',').map((o) => o.trim()).filter((o) => o !== '')
  if (d.type === 'choice') return { type: 'choice', instructions: d.instructions, criteria: Object.fromEntries(options.map((o) => [o, null])) }
  if (d.type === 'score') return { type: 'score', instructions: d.instructions, criteria: options }
  return { type: 'noul', instructions: d.instructions }
}

/** Each probability of an answer, labelled as the page shows it. */
function rows (answer: SystemOneAnswer): Array<[string, number]> {
  if (answer.type === 'noul') return [['yes', answer.noul], ['no', 1 - answer.noul]]
  return Object.entries(answer.probabilities).map(([key, p]) => [answer.type === 'score' ? `${key}: ${String(answer.legend[key] ?? '')}` : key, p])
}

function verdict (answer: SystemOneAnswer): string {
  if (answer.type === 'noul') return answer.noul >= 0.5 ? 'yes' : 'no'
  if (answer.type === 'choice') return `${answer.choice} (confidence ${answer.confidence.toFixed(2)})`
  return `${answer.score.toFixed(2)} (confidence ${answer.confidence.toFixed(2)})`
}

/**
 * Asks a decision model (or a chat model) questions about a state at /v1/systemone: a small form, and a bar for
 * each probability of each answer.
 */
export function DecideView ({ records }: { records: ModelRecord[] }) {
  const models = records.map((r) => r.name)
  const deciders = records.filter((r) => r.capabilities?.includes('decision')).map((r) => r.name)
  const [model, setModel] = useState('')
  const [state, setState] = useState('')
  const [drafts, setDrafts] = useState<Draft[]>([{ type: 'noul', instructions: '', options: '' }])
  const [reply, setReply] = useState<Reply | null>(null)
  const [problem, setProblem] = useState<string | null>(null)
  const [asking, setAsking] = useState(false)
  const chosen = model || deciders[0] || models[0] || ''
  const change = (i: number, part: Partial<Draft>): void => setDrafts((list) => list.map((d, j) => j === i ? { ...d, ...part } : d))

  const ask = async (event: Event): Promise<void> => {
    event.preventDefault()
    setAsking(true)
    setProblem(null)
    try {
      const questions = Object.fromEntries(drafts.map((d, i) => [`q${i + 1}`, asked(d)]))
      setReply(await sendJson<Reply>('POST', '/v1/systemone', { model: chosen, state, questions }))
    } catch (err) {
      setReply(null)
      setProblem(err instanceof Error ? err.message : String(err))
    } finally {
      setAsking(false)
    }
  }

  return (
    <div class="models-view decide-view">
      <section aria-labelledby="decide-heading">
        <h2 id="decide-heading">Decide</h2>
        <form class="decide-form" onSubmit={(e) => { void ask(e) }}>
          <label for="decide-model">Decision model</label>
          <select id="decide-model" value={chosen} onChange={(e) => setModel(e.currentTarget.value)}>
            {models.map((m) => <option key={m} value={m}>{m}{deciders.includes(m) ? '' : ' (chat, uncalibrated)'}</option>)}
          </select>
          <label for="decide-state">State</label>
          <textarea id="decide-state" rows={4} value={state} required onInput={(e) => setState(e.currentTarget.value)} />
          {drafts.map((d, i) => (
            <fieldset key={i} class="decide-question">
              <legend>Question {i + 1}</legend>
              <label for={`decide-type-${i}`}>Kind</label>
              <select id={`decide-type-${i}`} value={d.type} onChange={(e) => change(i, { type: e.currentTarget.value as QuestionType })}>
                {(Object.keys(TYPE_NAMES) as QuestionType[]).map((t) => <option key={t} value={t}>{TYPE_NAMES[t]}</option>)}
              </select>
              <label for={`decide-instructions-${i}`}>Question</label>
              <input id={`decide-instructions-${i}`} value={d.instructions} required onInput={(e) => change(i, { instructions: e.currentTarget.value })} />
              {d.type !== 'noul'
                ? <>
                    <label for={`decide-options-${i}`}>{d.type === 'choice' ? 'Options, separated by commas' : 'Levels, lowest first, separated by commas'}</label>
                    <input id={`decide-options-${i}`} value={d.options} required onInput={(e) => change(i, { options: e.currentTarget.value })} />
                  </>
                : null}
              {drafts.length > 1 ? <button type="button" onClick={() => setDrafts((list) => list.filter((_, j) => j !== i))}>Remove question {i + 1}</button> : null}
            </fieldset>
          ))}
          <div class="decide-actions">
            <button type="button" onClick={() => setDrafts((list) => [...list, { type: 'choice', instructions: '', options: '' }])}>Add a question</button>
            <button type="submit" class="primary" disabled={asking || chosen === ''}>{asking ? 'Asking…' : 'Ask'}</button>
          </div>
        </form>
        {problem ? <p class="problem" role="alert">{problem}</p> : null}
        {reply
          ? <div class="decide-answers" aria-live="polite">
              {Object.entries(reply.answers).map(([id, answer], i) => (
                <div key={id} class="decide-answer">
                  <h3>{drafts[i]?.instructions ?? id}: {verdict(answer)}</h3>
                  <table>
                    <tbody>
                      {rows(answer).map(([label, p]) => (
                        <tr key={label}>
                          <th scope="row">{label}</th>
                          <td><meter min={0} max={1} value={p} aria-label={`${label}: ${p.toFixed(3)}`} /></td>
                          <td>{p.toFixed(3)}</td>
                        </tr>
                      ))}
                    </tbody>
                  </table>
                </div>
              ))}
              <p class="decide-usage">{reply.model}, {reply.usage.input_tokens} prompt tokens</p>
            </div>
          : null}
      </section>
    </div>
  )
}
