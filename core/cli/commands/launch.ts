import { homedir } from 'node:os'
import { AGENTS, type AgentWiring } from './agents/index.js'
import { undoMerge } from './agents/merged-settings.js'
import { onPath } from './agents/on-path.js'
import { printAgent } from './agents/print-agent.js'
import { runAgent } from './agents/run-agent.js'
import { CLIENT_FLAGS, CLIENT_OPTIONS, type Command } from './command.js'
import type { GatewayClient } from '../../platform/gateway-client.js'
import { UsageError } from '../../platform/usage-error.js'

const NAMES = (): string => Object.keys(AGENTS).join(', ')

/**
 * `ollama launch` for llamagate: starts a coding agent wired to this server with its own documented settings
 * (base URL, key, model, its context window), or prints them; with no agent, lists those it knows.
 */
export const launch: Command = {
  name: 'launch',
  summary: 'start a coding agent wired to this server (no agent: list them)',
  usage: [
    'llamagate launch <agent> [--model M] [--print] [-- agent arguments...]',
    'llamagate launch                 (the agents it knows, and which are installed)',
    'llamagate launch --undo <agent>  (put back a settings file a killed launch left changed)',
  ],
  flags: [
    '--model M        the model it talks to (default: the most recently changed model)',
    '--print          print the settings, files and command instead of starting it',
    '--undo           put back the user\'s settings file that a launch of this agent changed and could not restore',
    ...CLIENT_FLAGS,
    'The agent is found on PATH; its key is LLAMAGATE_API_KEY, or a placeholder when the server has none.',
  ],
  options: { ...CLIENT_OPTIONS, model: { type: 'string' }, print: { type: 'boolean' }, undo: { type: 'boolean' } },
  positionals: { min: 0, max: Number.MAX_SAFE_INTEGER },
  async run ({ values, positionals, stdout, stderr, client }) {
    const [name, ...given] = positionals
    if (name === undefined) {
      if (values.undo === true) throw new UsageError('--undo takes an agent: llamagate launch --undo <agent>')
      await listAgents(stdout)
      return 0
    }
    const recipe = AGENTS[name]
    if (recipe === undefined) throw new UsageError(`unknown agent "${name}": one of ${NAMES()}`)
    const home = homedir()
    if (values.undo === true) {
      const undone = await undoMerge(name, recipe.merged, home, (line) => stderr.write(`llamagate launch: ${line}\n`))
      stdout.write(undone ? `put back the settings of ${name} as they were before launch\n` : `nothing to undo for ${name}: launch left no settings of its changed\n`)
      return 0
    }
    const wiring = await wire(client(), values.model as string | undefined)
    const rest = given.length > 0 ? given : [...(recipe.defaultArgs ?? [])]
    if (values.print === true) {
      await printAgent(name, recipe, wiring, rest, home, stdout)
      return 0
    }
    return await runAgent({ name, recipe, wiring, rest, home, stderr })
  },
}

/** Each agent known, whether it is on PATH, and how to install it when not. */
export async function listAgents (stdout: NodeJS.WritableStream, path = process.env.PATH): Promise<void> {
  stdout.write('Agents llamagate launch wires up (llamagate launch <agent>):\n')
  const width = Math.max(...Object.keys(AGENTS).map((n) => n.length))
  const titleWidth = Math.max(...Object.values(AGENTS).map((r) => r.title.length))
  for (const [name, recipe] of Object.entries(AGENTS)) {
    const found = await onPath(recipe.command, path)
    stdout.write(`  ${name.padEnd(width)}  ${recipe.title.padEnd(titleWidth)}  ${found ?? `not on PATH: npm install -g ${recipe.npmPackage}`}\n`)
  }
}

/**
 * The server's address and key as the client has them, the model (checked to exist), its context window and an
 * output limit. The window is the trained context from /api/show: llamagate grows a model's context up to it.
 */
async function wire (client: GatewayClient, model: string | undefined): Promise<AgentWiring> {
  const name = model ?? (await client.json<{ models: Array<{ name: string }> }>('GET', '/api/tags')).models[0]?.name
  if (name === undefined) throw new UsageError('the server has no model yet: pull one (llamagate pull <owner>/<name>), or name one with --model')
  const shown = await client.json<{ model_info?: Record<string, unknown> }>('POST', '/api/show', { model: name })
  const trained = Object.entries(shown.model_info ?? {}).find(([key]) => key.endsWith('.context_length'))?.[1]
  const contextLength = typeof trained === 'number' && trained > 0 ? trained : null
  return {
    url: client.url,
    key: client.apiKey ?? 'llamagate',
    model: name,
    contextLength,
    outputLimit: contextLength === null ? 8192 : Math.min(8192, Math.floor(contextLength / 4)),
  }
}
