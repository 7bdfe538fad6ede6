/** Lets every worker finish what it is doing and wait, so that the gateway can be measured quiet. */
export class Gate {
  private closed: { promise: Promise<void>, open: () => void } | null = null
  private parked = 0
  private change: (() => void) | null = null
  constructor (private running: number) {}

  async pass (): Promise<void> {
    while (this.closed !== null) {
      this.parked++
      this.change?.()
      await this.closed.promise
      this.parked--
    }
  }

  /** A worker is done for good. */
  leave (): void { this.running--; this.change?.() }

  /** Resolves once every running worker waits at the gate. */
  async close (): Promise<void> {
    let open!: () => void
    this.closed = { promise: new Promise<void>((resolve) => { open = resolve }), open }
    while (this.parked < this.running) await new Promise<void>((resolve) => { this.change = resolve })
    this.change = null
  }

  open (): void {
    this.closed?.open()
    this.closed = null
  }
}
