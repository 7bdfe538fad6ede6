import { existsSync } from 'node:fs'
import { homedir } from 'node:os'
import { dirname, join } from 'node:path'
import type { AgentRecipe } from './recipe.js'

/**
 * The user's own OpenClaw config, where OpenClaw looks for it (docs/help/environment.md): OPENCLAW_CONFIG_PATH, else
 * openclaw.json in the state folder (OPENCLAW_STATE_DIR, else ~/.openclaw under OPENCLAW_HOME or HOME).
 */
function usersConfig (env: NodeJS.ProcessEnv = process.env): string {
  if (env.OPENCLAW_CONFIG_PATH?.trim()) return env.OPENCLAW_CONFIG_PATH.trim()
  const state = env.OPENCLAW_STATE_DIR?.trim() || join(env.OPENCLAW_HOME?.trim() || homedir(), '.openclaw')
  return join(state, 'openclaw.json')
}

/**
 * OpenClaw through a config of launch's own (OPENCLAW_CONFIG_PATH) that includes the user's (`$include`, read-only
 * from outside the config's folder once OPENCLAW_INCLUDE_ROOTS admits it) and adds, on top, a custom provider of
 * `api: "openai-completions"` (what its docs and its llama.cpp plugin use for llama-server) with the model's window
 * and output limit, as the default model. The key stays in the environment: the config names it as
 * `${LLAMAGATE_API_KEY}`, which OpenClaw substitutes when it reads the file. With no arguments, `openclaw chat` (its
 * terminal UI on the embedded runtime: a running Gateway would keep its own config).
 */
export const openclaw: AgentRecipe = {
  title: 'OpenClaw',
  command: 'openclaw',
  npmPackage: 'openclaw',
  env: ({ key }, dir) => {
    const theirs = usersConfig()
    const roots = [existsSync(theirs) ? dirname(theirs) : undefined, process.env.OPENCLAW_INCLUDE_ROOTS].filter((root) => root)
    return {
      OPENCLAW_CONFIG_PATH: join(dir, 'openclaw.json'),
      LLAMAGATE_API_KEY: key,
      ...(roots.length > 0 ? { OPENCLAW_INCLUDE_ROOTS: roots.join(':') } : {}),
    }
  },
  args: () => [],
  defaultArgs: ['chat'],
  files: ({ url, model, contextLength, outputLimit }) => {
    const theirs = usersConfig()
    return {
      'openclaw.json': `${JSON.stringify({
        ...(existsSync(theirs) ? { $include: theirs } : {}),
        models: {
          mode: 'merge',
          providers: {
            llamagate: {
              baseUrl: `${url}/v1`,
              apiKey: '${LLAMAGATE_API_KEY}',
              api: 'openai-completions',
              models: [{
                id: model,
                name: model,
                reasoning: false,
                input: ['text'],
                ...(contextLength !== null ? { contextWindow: contextLength } : {}),
                maxTokens: outputLimit,
              }],
            },
          },
        },
        // No fallbacks: a failed turn says so rather than going to a provider of the user's elsewhere.
        agents: { defaults: { model: { primary: `llamagate/${model}`, fallbacks: [] } } },
      }, null, 2)}\n`,
    }
  },
}
