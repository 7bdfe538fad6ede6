import type { AgentRecipe, AgentWiring } from './recipe.js'

/** opencode through its inline config (OPENCODE_CONFIG_CONTENT, merged over the user's files) with an OpenAI-compatible provider. */
export const opencode: AgentRecipe = {
  title: 'opencode',
  command: 'opencode',
  npmPackage: 'opencode-ai',
  env: (wiring) => ({ OPENCODE_CONFIG_CONTENT: inlineConfig(wiring) }),
  args: () => [],
}

/**
 * The inline config opencode reads (and Kilo, its fork): this server as an OpenAI-compatible provider (chat
 * completions), the model for both its main and small roles, with its window and output limit.
 */
export function inlineConfig ({ url, key, model, contextLength, outputLimit }: AgentWiring): string {
  return JSON.stringify({
    model: `llamagate/${model}`,
    small_model: `llamagate/${model}`,
    provider: {
      llamagate: {
        npm: '@ai-sdk/openai-compatible',
        name: 'llamagate',
        options: { baseURL: `${url}/v1`, apiKey: key },
        models: { [model]: { name: model, ...(contextLength !== null ? { limit: { context: contextLength, output: outputLimit } } : {}) } },
      },
    },
  })
}
