/** A step of a model source's pull, as `/api/pull` streams it (Ollama's `{status, digest, total, completed}`). */
export interface PullProgress {
  /** What it is doing. @default `pulling <model> from <source>` */
  status?: string
  /** What part it is on (a file's name), when it has several. */
  digest?: string
  /** Bytes in all and so far. */
  total?: number
  completed?: number
}

/** What a model source's pull is given. */
export interface PullContext {
  /** Aborted when every client of the pull left, or the server shuts down: stop, and throw its reason. */
  signal: AbortSignal
  /** Tells the pull's clients where it stands: as often as it likes, the gateway passes on a few a second. */
  progress(step: PullProgress): void
  /** An empty folder beside the models (its files hard-link into the store), removed once the pull ends. */
  dir: string
}

/**
 * A model source of a plugin's own (`app.modelSources.add`): it answers `/api/pull` (and `llamagate pull`) for the
 * model names it claims, instead of the hub, with a GGUF file the store then imports under the name pulled.
 */
export interface ModelSourceSpec {
  /** How errors and logs name it. */
  name: string
  /** Whether it serves a pull of `model` (`<owner>/<name>[:tag]`, as the client sent it). */
  claims(model: string): boolean
  /**
   * Brings the model's GGUF file (the first of its parts, for a split one) and resolves with its path: a file in
   * `context.dir` is moved into the store, any other is linked or copied. A throw fails the pull with a 502
   * naming the source (a GatewayError it throws, a ModelNotFoundError, keeps its own status).
   */
  pull(model: string, context: PullContext): Promise<string>
  /**
   * The longest it may go without telling a step (`progress`): past it the pull fails with a 502 naming this bound
   * (`timeoutMs`), and `signal` aborts. @default 300000
   */
  timeoutMs?: number
}

/** Where plugins add their model sources (`app.modelSources`); the first that claims a name pulls it. */
export interface ModelSources {
  add(spec: ModelSourceSpec): void
}
