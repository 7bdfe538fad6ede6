/** Counts the requests being answered, so that a drain can wait for the last one to end. */
export class InFlight {
  private count = 0
  private waiters: Array<() => void> = []

  get size (): number { return this.count }

  /** One more request; call what it returns once, when its response is over (sent whole, or cut). */
  begin (): () => void {
    this.count++
    let ended = false
    return () => {
      if (ended) return
      ended = true
      this.count--
      if (this.count === 0) for (const wake of this.waiters.splice(0)) wake()
    }
  }

  /** Resolves when no request is in flight (at once if none is). */
  idle (): Promise<void> {
    if (this.count === 0) return Promise.resolve()
    return new Promise((resolve) => this.waiters.push(resolve))
  }
}
