/** What every lease tells the lease router's observers (`app.leases.events`), whatever its source; models by name. */
export interface LeaseEvents {
  /** A request's first token went to its client, `seconds` after the request asked for a place (load and queue included). */
  firstToken: [model: string, seconds: number]
  /** Tokens one request had read (its prompt, cached ones included) and generated, as its backend reported them. */
  tokens: [model: string, prompt: number, generated: number]
}
