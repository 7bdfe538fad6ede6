/** A state machine asked to move where its table does not lead: a bug in its owner, never a request's fault. */
export class IllegalTransitionError extends Error {
  constructor (subject: string, from: string, to: string) {
    super(`${subject}: no move from ${from} to ${to}`)
    this.name = 'IllegalTransitionError'
  }
}
