import t from 'tap'
import { AGENTS, type AgentWiring } from '../../../core/commands/agents/index.js'

// Issue 51: any local user reads another's command line (`ps`, /proc/<pid>/cmdline), not its environment. Every
// agent `llamagate launch` starts gets its key from the environment (or a file only its owner reads), never from its
// arguments.

const wiring: AgentWiring = { url: 'http://127.0.0.1:11435', key: 'sk-launch-secret-0123456789', model: 'acme/tiny', contextLength: 4096, outputLimit: 1024 }

t.test('every agent: the key is in its environment and nowhere in its arguments', async (t) => {
  t.ok(Object.keys(AGENTS).length >= 4, Object.keys(AGENTS).join(', '))
  for (const [name, recipe] of Object.entries(AGENTS)) {
    const args = recipe.args(wiring, '/tmp/llamagate-x')
    t.notOk(args.some((arg) => arg.includes(wiring.key)), `${name}: no argument holds the key (${args.join(' ')})`)
    // Not even a piece of it (a flag's value split, or a config value quoted into a TOML string).
    t.notOk(args.join(' ').includes(wiring.key.slice(3, 20)), `${name}: nor a part of it`)
    // Or a settings file of launch's private folder (mode 600), which its environment points it at.
    const carriers = [...Object.values(recipe.env(wiring, '/tmp/llamagate-x')), ...Object.values(recipe.files?.(wiring, '/tmp/llamagate-x') ?? {})]
    t.ok(carriers.some((value) => value.includes(wiring.key)), `${name}: its environment or private settings carry the key`)
  }
})
