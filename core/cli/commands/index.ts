import { builtinManifests } from '../../platform/plugin-loader.js'
import type { Command } from './command.js'
import { copy } from './copy.js'
import { create } from './create.js'
import { doctor } from './doctor.js'
import { launch } from './launch.js'
import { list } from './list.js'
import { ps } from './ps.js'
import { pull } from './pull.js'
import { remove } from './remove.js'
import { run } from './run.js'
import { show } from './show.js'
import { stop } from './stop.js'
import { serve } from './serve.js'

/** The core's own commands, in the order `llamagate help` lists them. */
const CORE_COMMANDS: Command[] = [
  serve,
  pull,
  run,
  list,
  ps,
  show,
  copy,
  remove,
  stop,
  create,
  launch,
  doctor,
]

/** Every command: the core's, then those the plugins bring (import, rpc-worker), in plugins/builtin.json's order. */
export async function allCommands (): Promise<Command[]> {
  return [...CORE_COMMANDS, ...(await builtinManifests()).flatMap((m) => m.commands ?? [])]
}

export function findCommand (commands: readonly Command[], name: string): Command | undefined {
  return commands.find((c) => c.name === name || c.aliases?.includes(name))
}
