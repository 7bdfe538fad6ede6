/** Each event's arguments, by name: `{ loaded: [model: string, seconds: number] }`. */
export type EventMap<T> = { [K in keyof T]: unknown[] }

/**
 * What a service tells observers (the metrics plugin) about what it does, without knowing who listens.
 * Listeners run synchronously, in the order they were added; one that throws is reported to `onListenerError`
 * and never reaches the service, whose work goes on as if nobody listened.
 */
export class EventHub<T extends EventMap<T>> {
  private readonly listeners: { [K in keyof T]?: Array<(...args: T[K]) => void> } = {}

  constructor (private readonly onListenerError: (err: unknown) => void = () => {}) {}

  /** Calls `listener` on every `event` from now on. */
  on<K extends keyof T> (event: K, listener: (...args: T[K]) => void): void {
    (this.listeners[event] ??= []).push(listener)
  }

  /** Calls `listener` on `event` no more (an emit under way still calls it: the list is replaced, not changed). */
  off<K extends keyof T> (event: K, listener: (...args: T[K]) => void): void {
    const list = this.listeners[event]
    if (list !== undefined) this.listeners[event] = list.filter((l) => l !== listener)
  }

  emit<K extends keyof T> (event: K, ...args: T[K]): void {
    const list = this.listeners[event]
    if (list === undefined) return
    for (const listener of list) {
      try {
        listener(...args)
      } catch (err) {
        this.onListenerError(err)
      }
    }
  }
}
