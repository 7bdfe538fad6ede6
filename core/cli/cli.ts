#!/usr/bin/env -S node --max-semi-space-size=2
import { existsSync, realpathSync } from 'node:fs'
import { pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import { ConfigError } from '../config/config-error.js'
import { GatewayError } from '../base/errors.js'
import { PluginLoadError } from '../platform/plugin-loader.js'
import { OLLAMA_API_VERSION, version } from '../base/version.js'
import { clientFor, type Command } from './commands/command.js'
import { ServerError, ServerUnreachableError } from '../platform/gateway-client.js'
import { allCommands, findCommand } from './commands/index.js'
import { needsConfig } from './commands/server-address.js'
import { UsageError } from '../platform/usage-error.js'

function usage (commands: readonly Command[]): string {
  const width = Math.max('version'.length, ...commands.map((c) => [c.name, ...(c.aliases ?? [])].join(', ').length))
  const lines = commands.map((c) => `  ${[c.name, ...(c.aliases ?? [])].join(', ').padEnd(width + 2)}${c.summary}`)
  return `usage: llamagate <command> [flags]\n\ncommands:\n${lines.join('\n')}\n  ${'help'.padEnd(width + 2)}show this text, or a command's: llamagate help <command>\n  ${'version'.padEnd(width + 2)}print the version (and the Ollama API level it serves)\n`
}

function commandHelp (command: Command): string {
  const names = [command.name, ...(command.aliases ?? [])].join(', ')
  return `${names}: ${command.summary}\n\nusage: ${command.usage.join('\n       ')}\n` +
    (command.flags?.length ? `\nflags:\n${command.flags.map((f) => `  ${f}`).join('\n')}\n` : '')
}

/** Where a run writes: the process's own streams, or a test's (it runs commands in its process, without a start's cost). */
export interface CliOutput { stdout: NodeJS.WriteStream, stderr: NodeJS.WriteStream }

export async function main (argv: string[], out: CliOutput = process): Promise<number> {
  const [name, ...rest] = argv
  if (name === 'version' || name === '--version' || name === '-v') {
    out.stdout.write(`${version()} (Ollama API ${OLLAMA_API_VERSION})\n`)
    return 0
  }
  let commands = await allCommands()
  const asked = name === 'help' ? rest[0] : name
  // config.yaml's plugins are loaded only for help, or for a name no built-in command has.
  if (asked === undefined || asked === '--help' || asked === '-h' || findCommand(commands, asked) === undefined) {
    try {
      commands = [...commands, ...await pluginCommands(argv, commands)]
    } catch (err) {
      if (!(err instanceof ConfigError || err instanceof PluginLoadError)) throw err
      out.stderr.write(`llamagate: the commands of config.yaml's plugins are not listed: ${err.message}\n`)
      if (asked !== undefined && asked !== '--help' && asked !== '-h') return 2
    }
  }
  switch (name) {
    case undefined: case '--help': case '-h':
      out.stdout.write(usage(commands))
      return name === undefined ? 2 : 0
    case 'help': {
      if (rest[0] === undefined) { out.stdout.write(usage(commands)); return 0 }
      const command = findCommand(commands, rest[0])
      if (command === undefined) { out.stderr.write(`llamagate: unknown command "${rest[0]}"\n\n${usage(commands)}`); return 2 }
      out.stdout.write(commandHelp(command))
      return 0
    }
  }
  const command = findCommand(commands, name)
  if (command === undefined) {
    out.stderr.write(`llamagate: unknown command "${name}"\n\n${usage(commands)}`)
    return 2
  }
  return runCommand(command, rest, out)
}

/** The commands of the admin plugins of the config.yaml `--config FILE` (anywhere in argv), else the usual one names. */
async function pluginCommands (argv: string[], builtin: readonly Command[]): Promise<Command[]> {
  const at = argv.findIndex((arg) => arg === '--config' || arg.startsWith('--config='))
  const config = at < 0 ? undefined : argv[at]!.startsWith('--config=') ? argv[at]!.slice('--config='.length) : argv[at + 1]
  // Only the file lists plugins (no variable does): one that lists none costs no load of the configuration's schema.
  const [{ readConfigFile }, { resolvePath, SHIPPED_CONFIG }] = await Promise.all([import('../config/config-layers.js'), import('../base/paths.js')])
  const given = config ?? process.env.LLAMAGATE_CONFIG
  const file = given !== undefined ? resolvePath(given, process.cwd()) : SHIPPED_CONFIG
  const plugins = existsSync(file) ? readConfigFile(file).plugins : undefined
  if (!Array.isArray(plugins) || plugins.length === 0) return []
  const { adminCommands } = await import('../platform/plugin-manifests.js')
  return adminCommands({ config }, process.env, new Set(builtin.flatMap((c) => [c.name, ...c.aliases ?? []])))
}

async function runCommand (command: Command, args: string[], out: CliOutput): Promise<number> {
  const prefix = `llamagate ${command.name}`
  try {
    const { values, positionals } = parseFlags(command, args)
    if (values.help === true) {
      out.stdout.write(commandHelp(command))
      return 0
    }
    // config.yaml is read (and its schema loaded) only when it is where the address comes from; its core keys
    // say it, so a plugin's section or runtime kind needs no loading of the plugin.
    const readConfig = 'host' in command.options && needsConfig(values as { host?: string }, process.env)
      ? (await import('../platform/plugin-manifests.js')).loadBuiltinKeys
      : undefined
    return await command.run({
      values, positionals, stdout: out.stdout, stderr: out.stderr, stdin: process.stdin, client: clientFor(values, process.env, readConfig),
      config: async () => (await (await import('../platform/plugin-manifests.js')).loadConfigAndPlugins({ config: values.config as string | undefined })).config,
    })
  } catch (err) {
    if (err instanceof UsageError) {
      out.stderr.write(`${prefix}: ${err.message}\n\n${commandHelp(command)}`)
      return 2
    }
    if (err instanceof ConfigError || err instanceof PluginLoadError) {
      out.stderr.write(`${prefix}: ${err.message}\n`)
      return 2
    }
    if (err instanceof ServerError || err instanceof ServerUnreachableError || err instanceof GatewayError) {
      out.stderr.write(`${prefix}: ${err.message}\n`)
      return 1
    }
    // Never a stack for a person; LLAMAGATE_DEBUG shows it for a bug report.
    const detail = process.env.LLAMAGATE_DEBUG ? (err as Error).stack : (err as Error).message
    out.stderr.write(`${prefix}: unexpected error: ${detail ?? String(err)}\n`)
    return 1
  }
}

function parseFlags (command: Command, args: string[]): { values: Record<string, string | boolean | string[] | undefined>, positionals: string[] } {
  const bare = command.bareValues ?? {}
  args = args.map((arg) => arg.startsWith('--') && Object.hasOwn(bare, arg.slice(2)) ? `${arg}=${bare[arg.slice(2)]}` : arg)
  let parsed
  try {
    parsed = parseArgs({ args, options: { ...command.options, help: { type: 'boolean', short: 'h' } }, allowPositionals: true, strict: true })
  } catch (err) {
    throw new UsageError((err as Error).message)
  }
  const { min, max } = command.positionals
  const count = parsed.positionals.length
  if (parsed.values.help !== true && (count < min || count > max)) {
    throw new UsageError(command.positionalsHint ?? (max === 0 ? `takes no arguments, got "${parsed.positionals.join(' ')}"` : `expected ${command.usage[0]!.replace(/^llamagate \S+ /, '')}`))
  }
  return parsed
}

// Run only as the program, not when imported by a test.
// (npm's bin link is a symlink, hence realpath.)
if (process.argv[1] && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) {
  main(process.argv.slice(2)).then((code) => { if (code !== 0) process.exit(code) }, (err) => {
    process.stderr.write(`llamagate: ${(err as Error).stack ?? String(err)}\n`)
    process.exit(1)
  })
}
