import type { AgentRecipe } from './recipe.js'

/**
 * GitHub Copilot CLI with its own model provider (BYOK, `copilot help environment`): COPILOT_PROVIDER_* variables,
 * chat completions (its default wire API, the one it names for Ollama and vLLM), the model's prompt and output
 * budgets (a model outside its catalog has none otherwise). No GitHub login is needed with a provider set.
 */
export const copilot: AgentRecipe = {
  title: 'GitHub Copilot CLI',
  command: 'copilot',
  npmPackage: '@github/copilot',
  env: ({ url, key, model, contextLength, outputLimit }) => ({
    COPILOT_PROVIDER_BASE_URL: `${url}/v1`,
    COPILOT_PROVIDER_TYPE: 'openai',
    COPILOT_PROVIDER_WIRE_API: 'completions',
    COPILOT_PROVIDER_API_KEY: key,
    COPILOT_MODEL: model,
    ...(contextLength !== null ? { COPILOT_PROVIDER_MAX_PROMPT_TOKENS: String(contextLength - outputLimit) } : {}),
    COPILOT_PROVIDER_MAX_OUTPUT_TOKENS: String(outputLimit),
  }),
  // Offline: no GitHub sign-in, telemetry or update download ("Requires a local model provider"). A user who wants
  // its web tools sets COPILOT_OFFLINE=false.
  switches: { COPILOT_OFFLINE: 'true' },
  args: () => [],
}
