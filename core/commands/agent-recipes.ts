/** What an agent needs to reach this server: where, with which key, which model, and how long a context it has. */
export interface AgentWiring {
  /** The server's URL, no trailing slash. */
  url: string
  /** The key it sends (LLAMAGATE_API_KEY, or a placeholder where the server has none: agents insist on one). */
  key: string
  model: string
  /** The model's trained context, for agents that budget their prompts by it. */
  contextLength: number | null
}

/**
 * A settings file an agent reads only from one place of the user's (no variable or flag points it elsewhere):
 * `launch` backs the user's file up, writes `apply`'s result, and puts the backup back when the agent exits;
 * `llamagate launch --undo <agent>` puts it back when launch itself could not (killed). Only for agents that leave
 * no other way: a private folder (`files`) leaves the user's settings untouched.
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
  /** The program on PATH. */
  command: string
  /** Its npm package, for the "not installed" hint. */
  npmPackage: string
  env(wiring: AgentWiring, dir: string): Record<string, string>
  /**
   * The agent's own switches that keep what it sends stable from one request to the next (a prompt cache then
   * reuses it): set unless the user's environment sets them otherwise.
   */
  switches?: Readonly<Record<string, string>>
  args(wiring: AgentWiring, dir: string): string[]
  /**
   * Settings files written for one run into `dir`, a private folder (mode 700, files 600) made by launch and removed
   * after the agent exits; `env` and `args` (given the same `dir`) point the agent at them. Keys may go here.
   */
  files?(wiring: AgentWiring, dir: string): Record<string, string>
  merged?: MergedSettings
}

/** Codex reads its provider from config.toml; `-c key=value` sets the same keys (TOML values) for one run. */
function codexConfig (values: Record<string, string>): string[] {
  return Object.entries(values).flatMap(([key, value]) => ['-c', `${key}=${JSON.stringify(value)}`])
}

/**
 * The agents `llamagate launch` wires up, each as its own docs say: Claude Code through Anthropic's variables (every
 * model tier set, so its side requests stay here too), Codex through a model provider of Responses' wire API (the
 * only one it speaks), opencode through its inline config with an OpenAI-compatible provider, Qwen Code through its
 * OpenAI variables.
 */
export const AGENTS: Readonly<Record<string, AgentRecipe>> = {
  claude: {
    command: 'claude',
    npmPackage: '@anthropic-ai/claude-code',
    env: ({ url, key, model }) => ({
      ANTHROPIC_BASE_URL: url,
      ANTHROPIC_AUTH_TOKEN: key,
      ANTHROPIC_MODEL: model,
      ANTHROPIC_DEFAULT_OPUS_MODEL: model,
      ANTHROPIC_DEFAULT_SONNET_MODEL: model,
      ANTHROPIC_DEFAULT_HAIKU_MODEL: model,
      ANTHROPIC_SMALL_FAST_MODEL: model,
      // Its preflight and telemetry go to Anthropic's hosts, which a local setup need not reach.
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    }),
    // As Ollama's launcher sets them (cmd/launch/claude.go). The attribution line that opens its system prompt differs
    // from one conversation to the next (and, from its native build, one request to the next); the "tokens left"
    // reminder it may send after tool results is a system message late in the conversation. The gateway copes with
    // both (docs/api.md: System messages among the others), but what is never sent costs nothing.
    switches: { CLAUDE_CODE_ATTRIBUTION_HEADER: '0', CLAUDE_CODE_TOTAL_TOKENS_REMINDER: 'off' },
    args: () => [],
  },
  codex: {
    command: 'codex',
    npmPackage: '@openai/codex',
    env: ({ key }) => ({ LLAMAGATE_API_KEY: key }),
    args: ({ url, model }) => [
      // As config values too: they reach `codex exec` as well as the interactive session.
      ...codexConfig({
        model,
        model_provider: 'llamagate',
        'model_providers.llamagate.name': 'llamagate',
        'model_providers.llamagate.base_url': `${url}/v1`,
        'model_providers.llamagate.env_key': 'LLAMAGATE_API_KEY',
        'model_providers.llamagate.wire_api': 'responses',
      }),
      '-m', model,
    ],
  },
  opencode: {
    command: 'opencode',
    npmPackage: 'opencode-ai',
    env: ({ url, key, model, contextLength }) => ({
      OPENCODE_CONFIG_CONTENT: JSON.stringify({
        model: `llamagate/${model}`,
        small_model: `llamagate/${model}`,
        provider: {
          llamagate: {
            npm: '@ai-sdk/openai-compatible',
            name: 'llamagate',
            options: { baseURL: `${url}/v1`, apiKey: key },
            models: { [model]: { name: model, ...(contextLength !== null ? { limit: { context: contextLength, output: Math.min(8192, Math.floor(contextLength / 4)) } } : {}) } },
          },
        },
      }),
    }),
    args: () => [],
  },
  qwen: {
    command: 'qwen',
    npmPackage: '@qwen-code/qwen-code',
    // Its --openai-api-key would show the key to anyone running `ps`; these are what that flag sets (its config/auth.ts).
    env: ({ url, key, model }) => ({ OPENAI_API_KEY: key, OPENAI_BASE_URL: `${url}/v1`, OPENAI_MODEL: model }),
    args: ({ model }) => ['--auth-type', 'openai', '-m', model],
  },
}
