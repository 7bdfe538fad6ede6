import { RuntimeError } from '../../core/base/errors.js'
import type { Instance } from './instance.js'

// Start failures delay the next start of the same model with the same load options: 1 s, 2 s, 4 s ... up to a
// minute. Keyed by the options, so that one client's bad options never hold back another's requests.
const BACKOFF_BASE_MS = 1000
const BACKOFF_MAX_MS = 60_000

/** The failed starts of each model, purpose and load options, and when the next may be tried. */
export class StartBackoff {
  private readonly failures = new Map<string, { count: number, retryAt: number, message: string }>()

  /** The key an instance's starts are counted under: its model, purpose and every load option. */
  static keyOf (instance: Pick<Instance, 'model' | 'purpose' | 'options'>): string {
    return `${instance.model.name}\0${instance.purpose}\0${JSON.stringify(Object.entries(instance.options).sort(([a], [b]) => a.localeCompare(b)))}`
  }

  /** @throws RuntimeError ('runtime_backoff') while the last failure's delay is not over */
  check (key: string, model: string): void {
    const failure = this.failures.get(key)
    if (failure && failure.retryAt > Date.now()) {
      throw new RuntimeError(`model "${model}" failed to start with these load options ${failure.count} time(s); next try in ${Math.ceil((failure.retryAt - Date.now()) / 1000)} s. Last error: ${failure.message}`, [], 'runtime_backoff')
    }
  }

  failed (key: string, err: unknown): void {
    const count = (this.failures.get(key)?.count ?? 0) + 1
    const delay = Math.min(BACKOFF_BASE_MS * 2 ** (count - 1), BACKOFF_MAX_MS)
    this.failures.set(key, { count, retryAt: Date.now() + delay, message: (err as Error).message })
  }

  succeeded (key: string): void {
    this.failures.delete(key)
  }
}
