import type { AgentRecipe } from './recipe.js'

/** opencode through its inline config (OPENCODE_CONFIG_CONTENT, merged over the user's files) with an OpenAI-compatible provider. */
export const opencode: AgentRecipe = {
  title: 'opencode',
  command: 'opencode',
  npmPackage: 'opencode-ai',
  env: ({ url, key, model, contextLength, outputLimit }) => ({
    OPENCODE_CONFIG_CONTENT: JSON.stringify({
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
    }),
  }),
  args: () => [],
}
