import type { ParseArgsConfig } from 'node:util'
import type { Config } from '../config/resolved-config.js'
import type { GatewayClient } from './gateway-client.js'

export { UsageError } from './usage-error.js'

export type OptionSpec = NonNullable<ParseArgsConfig['options']>
export type OptionValues = Record<string, string | boolean | string[] | undefined>

/** What a command gets: its parsed flags and arguments, the terminal, and the server (resolved on first use). */
export interface CommandContext {
  values: OptionValues
  positionals: string[]
  stdout: NodeJS.WriteStream
  stderr: NodeJS.WriteStream
  stdin: NodeJS.ReadStream
  /** The client of the server named by --host, the environment or config.yaml. */
  client: () => GatewayClient
  /**
   * The configuration as `serve` would resolve it (`--config FILE`, else $LLAMAGATE_CONFIG, else the shipped
   * config.yaml; the admin plugins' sections included), read on first call. @throws ConfigError, PluginLoadError
   */
  config: () => Promise<Config>
}

export interface Command {
  name: string
  aliases?: string[]
  /** One line for `llamagate help`. */
  summary: string
  /** `llamagate <name> ...` lines. */
  usage: string[]
  /** Flag lines for `llamagate help <name>`. */
  flags?: string[]
  options: OptionSpec
  /**
   * Values of string flags that may also be given bare, as Go's flags with a default (`--think` is
   * `--think=true`); a bare one never takes the next argument as its value.
   */
  bareValues?: Record<string, string>
  /** How many positional arguments it takes. */
  positionals: { min: number, max: number }
  /** What the usage line says was wrong when the count is off. */
  positionalsHint?: string
  run: (ctx: CommandContext) => Promise<number>
}

/** Flags every client command takes: where the server is. */
export const CLIENT_OPTIONS: OptionSpec = {
  host: { type: 'string' },
  config: { type: 'string' },
}
export const CLIENT_FLAGS = [
  '--host URL       the server (default: LLAMAGATE_HOST, else config.yaml\'s host and port)',
  '--config FILE    config file to read the address from (default: $LLAMAGATE_CONFIG, else the shipped one)',
]
export const JSON_OPTION: OptionSpec = { json: { type: 'boolean' } }
export const JSON_FLAG = '--json           print the server\'s JSON instead of a table'
