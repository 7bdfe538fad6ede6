/** What an agent needs to reach this server: where, with which key, which model, and how much of it to use. */
export interface AgentWiring {
  /** The server's URL, no trailing slash. */
  url: string
  /** The key it sends (LLAMAGATE_API_KEY, or a placeholder where the server has none: agents insist on one). */
  key: string
  model: string
  /**
   * The model's context window as llamagate serves it: the most it grows the context to for one conversation
   * (today the model's trained context, from /api/show `model_info["<arch>.context_length"]`); null when unknown.
   */
  contextLength: number | null
  /** Tokens an agent may ask for in one answer: a quarter of the window, at most 8192 (8192 when unknown). */
  outputLimit: number
}

/**
 * A settings file an agent reads only from one place of the user's (no variable or flag points it elsewhere):
 * `launch` backs the user's file up, writes `apply`'s result (mode 600), and puts the backup back when the agent
 * exits or launch is stopped; `llamagate launch --undo <agent>` puts it back when launch itself could not (killed).
 * Only for agents that leave no other way: a private folder (`files`) leaves the user's settings untouched.
 */
export interface MergedSettings {
  /** Relative to HOME. */
  path: string
  /** The file's content with the wiring merged in (existing: its text, or undefined when there is none). */
  apply(existing: string | undefined, wiring: AgentWiring): string
}

/**
 * How one coding agent is started against llamagate with only its own documented settings. The key goes in `env`
 * (or a file only its owner reads), never in `args`: any local user can read a command line (`ps`), not another
 * user's environment.
 */
export interface AgentRecipe {
  /** The agent's own name, for `llamagate launch`'s list. */
  title: string
  /** The program on PATH. */
  command: string
  /** Its npm package, for the "not installed" hint. */
  npmPackage: string
  env(wiring: AgentWiring, dir: string): Record<string, string>
  /**
   * The agent's own switches that keep what it sends stable from one request to the next (a prompt cache then
   * reuses it), or keep it from calling home: set unless the user's environment sets them otherwise.
   */
  switches?: Readonly<Record<string, string>>
  args(wiring: AgentWiring, dir: string): string[]
  /**
   * Settings files written for one run into `dir`, a private folder (mode 700, files 600) made by launch and removed
   * after the agent exits; `env` and `args` (given the same `dir`) point the agent at them. Keys may go here. Names
   * may hold folders (`agent/models.json`).
   */
  files?(wiring: AgentWiring, dir: string): Record<string, string>
  merged?: MergedSettings
  /** Arguments in place of the user's when none are given: the agent's own command for a session (`openclaw chat`). */
  defaultArgs?: readonly string[]
  /**
   * Why the agent cannot be wired now, or undefined: a service of its own already running from other settings, which
   * the agent would use instead of launch's (Claude Code Router's).
   */
  busy?(home: string): Promise<string | undefined>
  /** The agent's own arguments that end, after it exits, a service it started and leaves running (`ccr stop`). */
  afterExit?: readonly string[]
}
