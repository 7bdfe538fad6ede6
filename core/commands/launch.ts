import { spawn } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { AGENTS, type AgentWiring } from './agent-recipes.js'
import { CLIENT_FLAGS, CLIENT_OPTIONS, type Command } from './command.js'
import type { GatewayClient } from './gateway-client.js'
import { UsageError } from './usage-error.js'

/**
 * `ollama launch` for llamagate: starts a coding agent wired to this server with its own documented settings
 * (base URL, key, model; the context grows to fit its prompts on the server's side), or prints them.
 */
export const launch: Command = {
  name: 'launch',
  summary: 'start a coding agent (claude, codex, opencode, qwen) wired to this server',
  usage: ['llamagate launch <claude|codex|opencode|qwen> [--model M] [--print] [-- agent arguments...]'],
  flags: [
    '--model M        the model it talks to (default: the most recently changed model)',
    '--print          print the environment and command instead of starting it',
    ...CLIENT_FLAGS,
    'The agent is found on PATH; its key is LLAMAGATE_API_KEY, or a placeholder when the server has none.',
  ],
  options: { ...CLIENT_OPTIONS, model: { type: 'string' }, print: { type: 'boolean' } },
  positionals: { min: 1, max: Number.MAX_SAFE_INTEGER },
  positionalsHint: `expected an agent: ${Object.keys(AGENTS).join(', ')}`,
  async run ({ values, positionals, stdout, stderr, client }) {
    const [name, ...rest] = positionals as [string, ...string[]]
    const recipe = AGENTS[name]
    if (recipe === undefined) throw new UsageError(`unknown agent "${name}": one of ${Object.keys(AGENTS).join(', ')}`)
    const wiring = await wire(client(), values.model as string | undefined)
    // The user's own environment wins over the agent's switches, never over the wiring.
    const switches = Object.fromEntries(Object.entries(recipe.switches ?? {}).filter(([key]) => process.env[key] === undefined))
    // mkdtemp makes the folder 0700: only its owner reads the settings (and any key) written into it.
    const dir = await mkdtemp(join(tmpdir(), `llamagate-${name}-`))
    for (const [file, content] of Object.entries(recipe.files?.(wiring, dir) ?? {})) await writeFile(join(dir, file), content, { mode: 0o600 })
    const env = { ...switches, ...recipe.env(wiring, dir) }
    const args = [...recipe.args(wiring, dir), ...rest]
    if (values.print === true) {
      for (const [key, value] of Object.entries(env)) stdout.write(`export ${key}=${shellQuote(value)}\n`)
      stdout.write(`${[recipe.command, ...args].map(shellQuote).join(' ')}\n`)
      return 0
    }
    const code = await new Promise<number>((resolve) => {
      const child = spawn(recipe.command, args, { stdio: 'inherit', env: { ...process.env, ...env } })
      child.once('error', (err: NodeJS.ErrnoException) => {
        stderr.write(err.code === 'ENOENT'
          ? `llamagate launch: ${recipe.command} is not installed (or not on PATH): npm install -g ${recipe.npmPackage}\n`
          : `llamagate launch: could not start ${recipe.command}: ${err.message}\n`)
        resolve(127)
      })
      child.once('exit', (code, signal) => resolve(code ?? (signal ? 128 : 1)))
    })
    await rm(dir, { recursive: true, force: true })
    return code
  },
}

/** The server's address and key as the client has them, the model (checked to exist), and its trained context. */
async function wire (client: GatewayClient, model: string | undefined): Promise<AgentWiring> {
  const name = model ?? (await client.json<{ models: Array<{ name: string }> }>('GET', '/api/tags')).models[0]?.name
  if (name === undefined) throw new UsageError('the server has no model yet: pull one (llamagate pull <owner>/<name>), or name one with --model')
  const shown = await client.json<{ model_info?: Record<string, unknown> }>('POST', '/api/show', { model: name })
  const trained = Object.entries(shown.model_info ?? {}).find(([key]) => key.endsWith('.context_length'))?.[1]
  return { url: client.url, key: client.apiKey ?? 'llamagate', model: name, contextLength: typeof trained === 'number' ? trained : null }
}

function shellQuote (text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replace(/'/g, "'\\''")}'`
}
