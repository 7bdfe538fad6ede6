import type { AgentRecipe } from './recipe.js'

/** Qwen Code through its OpenAI variables. */
export const qwen: AgentRecipe = {
  title: 'Qwen Code',
  command: 'qwen',
  npmPackage: '@qwen-code/qwen-code',
  // Its --openai-api-key would show the key to anyone running `ps`; these are what that flag sets (its config/auth.ts).
  env: ({ url, key, model }) => ({ OPENAI_API_KEY: key, OPENAI_BASE_URL: `${url}/v1`, OPENAI_MODEL: model }),
  args: ({ model }) => ['--auth-type', 'openai', '-m', model],
}
