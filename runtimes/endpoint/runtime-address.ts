/** Where a running llama-server listens: a Unix socket (with a nominal origin), or a loopback port. */
export interface RuntimeAddress {
  /** `http://127.0.0.1:<port>`, or `http://localhost` when `socketPath` is set. */
  readonly baseUrl: string
  /** The Unix socket to connect to, or null for TCP. */
  readonly socketPath: string | null
}
