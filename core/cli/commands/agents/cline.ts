import { join } from 'node:path'
import type { AgentRecipe } from './recipe.js'

/**
 * Cline's CLI through its "OpenAI Compatible" provider (the one its docs name for any OpenAI-compatible endpoint), in a
 * provider settings file of launch's own: CLINE_PROVIDER_SETTINGS_PATH moves the file it otherwise reads from
 * ~/.cline/data/settings/providers.json (@cline/shared's storage paths). The key is in that file, which Cline prefers
 * over OPENAI_API_KEY (and its -k would put it on the command line); `lastUsedProvider` is what it starts with when
 * no -P is given. contextWindow and maxTokens become the model's input and output limits (@cline/core).
 */
export const cline: AgentRecipe = {
  title: 'Cline',
  command: 'cline',
  npmPackage: 'cline',
  env: (_wiring, dir) => ({ CLINE_PROVIDER_SETTINGS_PATH: join(dir, 'providers.json') }),
  args: () => [],
  files: ({ url, key, model, contextLength, outputLimit }) => ({
    'providers.json': `${JSON.stringify({
      version: 1,
      lastUsedProvider: 'openai-compatible',
      modes: {},
      providers: {
        'openai-compatible': {
          settings: {
            provider: 'openai-compatible',
            model,
            apiKey: key,
            baseUrl: `${url}/v1`,
            ...(contextLength !== null ? { contextWindow: contextLength } : {}),
            maxTokens: outputLimit,
          },
          updatedAt: new Date().toISOString(),
          tokenSource: 'manual',
        },
      },
    }, null, 2)}\n`,
  }),
}
