import type { Command } from './command.js'
import { copy } from './copy.js'
import { create } from './create.js'
import { doctor } from './doctor.js'
import { importCommand } from './import.js'
import { list } from './list.js'
import { ps } from './ps.js'
import { pull } from './pull.js'
import { remove } from './remove.js'
import { rpcWorker } from './rpc-worker.js'
import { run } from './run.js'
import { show } from './show.js'
import { stop } from './stop.js'
import { serve } from './serve.js'

/** Every command, in the order `llamagate help` lists them. */
export const COMMANDS: Command[] = [
  serve,
  pull,
  run,
  list,
  ps,
  show,
  copy,
  remove,
  stop,
  importCommand,
  create,
  doctor,
  rpcWorker,
]

export function findCommand (name: string): Command | undefined {
  return COMMANDS.find((c) => c.name === name || c.aliases?.includes(name))
}
