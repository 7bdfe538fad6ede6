import type { AgentRecipe } from './recipe.js'

/** Codex reads its provider from config.toml; `-c key=value` sets the same keys (TOML values) for one run. */
function codexConfig (values: Record<string, string>): string[] {
  return Object.entries(values).flatMap(([key, value]) => ['-c', `${key}=${JSON.stringify(value)}`])
}

/** Codex through a model provider of Responses' wire API (the only one it speaks); its key from a variable it names. */
export const codex: AgentRecipe = {
  title: 'Codex CLI',
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
}
