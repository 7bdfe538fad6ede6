import type { Command } from './command.js'
import { importCommand } from './import.js'
import { serve } from './serve.js'

/** Every command, in the order `llamagate help` lists them. */
export const COMMANDS: Command[] = [
  serve,
  importCommand,
]

export function findCommand (name: string): Command | undefined {
  return COMMANDS.find((c) => c.name === name || c.aliases?.includes(name))
}
