import type { AgentRecipe } from './recipe.js'

/**
 * Kilo CLI (an opencode fork) through its inline config, KILO_CONFIG_CONTENT: merged over the user's kilo.json for
 * the run, never written. The provider is an OpenAI-compatible one (chat completions), as its docs configure local
 * servers, with the model's window and output limit.
 */
export const kilo: AgentRecipe = {
  title: 'Kilo CLI',
  command: 'kilo',
  npmPackage: '@kilocode/cli',
  env: ({ url, key, model, contextLength, outputLimit }) => ({
    KILO_CONFIG_CONTENT: JSON.stringify({
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
  // Its update check, models.dev catalog and telemetry reach hosts a local setup need not.
  switches: { KILO_DISABLE_AUTOUPDATE: '1', KILO_DISABLE_MODELS_FETCH: '1', KILO_TELEMETRY_LEVEL: 'off' },
  args: () => [],
}
