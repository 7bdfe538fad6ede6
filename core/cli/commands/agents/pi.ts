import type { AgentRecipe, AgentWiring } from './recipe.js'

/**
 * pi's provider, as an extension (its docs/custom-provider.md: `pi.registerProvider`) loaded for one run with `-e`:
 * the user's ~/.pi/agent (models.json, settings, sessions, auth) stays as it is and in use. PI_CODING_AGENT_DIR would
 * move all of that away for the run, so it is not used. The key is named, not written: pi resolves an `apiKey` that
 * names a variable from the environment (docs/models.md, Value Resolution).
 */
function extension ({ url, model, contextLength, outputLimit }: AgentWiring): string {
  const provider = {
    baseUrl: `${url}/v1`,
    // Chat completions: "most compatible" in its docs/models.md, what its local-server examples (Ollama, vLLM) use.
    api: 'openai-completions',
    apiKey: 'LLAMAGATE_API_KEY',
    models: [{
      id: model,
      name: model,
      reasoning: false,
      input: ['text'],
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
      ...(contextLength !== null ? { contextWindow: contextLength } : {}),
      maxTokens: outputLimit,
    }],
  }
  return `// Written by llamagate launch for one run of pi; removed when it exits.\nexport default function (pi) {\n  pi.registerProvider('llamagate', ${JSON.stringify(provider, null, 2).replace(/\n/g, '\n  ')})\n}\n`
}

export const pi: AgentRecipe = {
  title: 'pi',
  command: 'pi',
  npmPackage: '@earendil-works/pi-coding-agent',
  env: ({ key }) => ({ LLAMAGATE_API_KEY: key }),
  // Its startup network operations (version check, package updates) reach hosts a local setup need not.
  switches: { PI_OFFLINE: '1' },
  files: (wiring) => ({ 'llamagate.js': extension(wiring) }),
  args: ({ model }, dir) => ['-e', `${dir}/llamagate.js`, '--provider', 'llamagate', '--model', model],
}
