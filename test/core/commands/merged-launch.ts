import { runAgent } from '../../../core/cli/commands/agents/run-agent.js'
import type { AgentRecipe } from '../../../core/cli/commands/agents/recipe.js'

// A launch of an agent whose settings are merged into HOME/.fake/settings.json: the stand-in agent is argv[2]
// (a shell script), so a test can stop this process at any point of the run and look at what it left.
const recipe: AgentRecipe = {
  title: 'Fake',
  command: process.argv[2]!,
  npmPackage: 'fake-agent',
  env: ({ key }) => ({ FAKE_KEY: key }),
  args: () => [],
  merged: {
    path: '.fake/settings.json',
    apply: (existing, { url }) => JSON.stringify({ ...(existing !== undefined ? JSON.parse(existing) as object : {}), baseUrl: url }),
  },
}
const code = await runAgent({
  name: 'fake',
  recipe,
  wiring: { url: 'http://127.0.0.1:1', key: 'sk-fake', model: 'acme/tiny', contextLength: 4096, outputLimit: 1024 },
  rest: [],
  home: process.env.HOME!,
  stderr: process.stderr,
})
process.exit(code)
