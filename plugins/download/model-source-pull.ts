import { mkdir, mkdtemp, rm } from 'node:fs/promises'
import { basename, join } from 'node:path'
import type { ModelSourceSpec, ModelSources, PullProgress } from '../../core/base/model-sources.js'
import { GatewayError } from '../../core/base/errors.js'
import type { ModelStore } from '../storage/model-store.js'

/** One event of a pull stream, as pull-service.ts's PullEvent (imported from there it would make a circle). */
interface PullEvent { status: string, digest?: string, total?: number, completed?: number }

const SOURCE_NAME = /^[A-Za-z0-9._-]{1,64}$/
const PROGRESS_INTERVAL_MS = 100
/** How long a source may go without telling a step of its pull, unless its spec says. */
const SOURCE_TIMEOUT_MS = 300_000

/** Plugins' model sources (`app.modelSources`, core/base/model-sources.ts): the first that claims a pulled name pulls it. */
export class ModelSourceRegistry implements ModelSources {
  private readonly sources: ModelSourceSpec[] = []

  add (spec: ModelSourceSpec): void {
    if (typeof spec?.name !== 'string' || !SOURCE_NAME.test(spec.name)) throw new Error(`a model source's name must be 1-64 of A-Z a-z 0-9 . _ - (got ${JSON.stringify(spec?.name)})`)
    if (typeof spec.claims !== 'function' || typeof spec.pull !== 'function') throw new Error(`model source "${spec.name}" needs a claims() and a pull() function`)
    if (spec.timeoutMs !== undefined && !(Number.isInteger(spec.timeoutMs) && spec.timeoutMs >= 1)) throw new Error(`model source "${spec.name}": timeoutMs must be a whole number of at least 1 (got ${JSON.stringify(spec.timeoutMs)})`)
    if (this.sources.some((s) => s.name === spec.name)) throw new Error(`the model source name "${spec.name}" is taken`)
    this.sources.push(spec)
  }

  /** The source that pulls `model`, or null for the hub. @throws GatewayError (502) when a source's claims() throws */
  claimant (model: string): ModelSourceSpec | null {
    for (const source of this.sources) {
      try {
        if (source.claims(model)) return source
      } catch (err) {
        throw sourceFailed(source, `its claims() threw for ${model}: ${messageOf(err)}`)
      }
    }
    return null
  }
}

/**
 * Pulls `model` from a plugin's source into the store: the source brings a GGUF (into a scratch folder beside the
 * models, so that it hard-links in), telling its progress; the store imports it under the name pulled.
 * @throws the signal's reason; a GatewayError the source threw; else a 502 naming the source
 */
export async function pullFromSource (source: ModelSourceSpec, model: string, deps: { store: ModelStore, signal: AbortSignal, emit: (event: PullEvent) => void }): Promise<void> {
  const { store, signal, emit } = deps
  const scratch = join(store.modelsDir, '.pulls')
  await mkdir(scratch, { recursive: true })
  const dir = await mkdtemp(join(scratch, `${source.name}-`))
  try {
    let file: unknown
    // The source's own signal: the pull's, or its bound (no step told for timeoutMs), whichever comes first.
    const quietMs = source.timeoutMs ?? SOURCE_TIMEOUT_MS
    const own = new AbortController()
    const stop = (): void => own.abort(signal.reason)
    signal.addEventListener('abort', stop, { once: true })
    let timer: NodeJS.Timeout | undefined
    const watch = (): void => {
      clearTimeout(timer)
      timer = setTimeout(() => own.abort(sourceFailed(source, `it told nothing of its pull of ${model} for ${quietMs} ms (its timeoutMs)`)), quietMs)
    }
    const told = throttled(`pulling ${model} from ${source.name}`, emit)
    watch()
    try {
      file = await untilAborted(source.pull(model, { signal: own.signal, dir, progress: (step) => { watch(); told(step) } }), own.signal)
    } catch (err) {
      if (own.signal.aborted) throw own.signal.reason
      if (err instanceof GatewayError) throw err
      throw sourceFailed(source, `it failed to pull ${model}: ${messageOf(err)}`)
    } finally {
      clearTimeout(timer)
      signal.removeEventListener('abort', stop)
    }
    if (typeof file !== 'string' || file === '') throw sourceFailed(source, `it gave no file for ${model}`)
    emit({ status: `importing ${basename(file)}` })
    await store.import(model, file)
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

/** The source's steps as pull events: the first, the last of each part, and at most one every 100 ms between. */
function throttled (status: string, emit: (event: PullEvent) => void): (step: PullProgress) => void {
  let last = 0
  let lastStatus: string | undefined
  return (step) => {
    const event: PullEvent = { status: typeof step?.status === 'string' ? step.status : status }
    if (typeof step?.digest === 'string') event.digest = step.digest
    if (Number.isFinite(step?.total) && Number.isFinite(step?.completed)) { event.total = step.total!; event.completed = step.completed! }
    const now = Date.now()
    const key = `${event.status}\0${event.digest ?? ''}`
    if (key === lastStatus && event.completed !== event.total && now - last < PROGRESS_INTERVAL_MS) return
    last = now
    lastStatus = key
    emit(event)
  }
}

/** A source that does not heed the signal still lets its pull end when the signal aborts. */
function untilAborted<T> (work: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason)
    if (signal.aborted) { onAbort(); return }
    signal.addEventListener('abort', onAbort, { once: true })
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort))
  })
}

function sourceFailed (source: ModelSourceSpec, why: string): GatewayError {
  return new GatewayError(502, `model source "${source.name}": ${why}`, { code: 'source_failed' })
}

function messageOf (err: unknown): string {
  return err instanceof Error ? err.message : String(err)
}
