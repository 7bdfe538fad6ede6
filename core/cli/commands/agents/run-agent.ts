import { spawn } from 'node:child_process'
import { rm } from 'node:fs/promises'
import { constants } from 'node:os'
import { UsageError } from '../../../platform/usage-error.js'
import { mergeSettings, type Merge } from './merged-settings.js'
import type { AgentRecipe, AgentWiring } from './recipe.js'
import { removeOrphanedFolders, settingsFolder, writeSettings } from './settings-folder.js'

export interface AgentRun {
  name: string
  recipe: AgentRecipe
  wiring: AgentWiring
  /** Arguments for the agent after the recipe's own. */
  rest: string[]
  /** HOME, where a merged settings file lives. */
  home: string
  stderr: NodeJS.WritableStream
}

/** The environment the recipe sets, its switches under it: the user's environment wins over a switch, never over the wiring. */
export function agentEnv (recipe: AgentRecipe, wiring: AgentWiring, dir: string, env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const switches = Object.fromEntries(Object.entries(recipe.switches ?? {}).filter(([key]) => env[key] === undefined))
  return { ...switches, ...recipe.env(wiring, dir) }
}

/**
 * Starts the agent with its settings and waits for it. What launch changed goes back whatever happens: the private
 * folder is removed, a merged file restored, when the agent exits, when it cannot start, and when launch is asked to
 * stop (SIGTERM, SIGHUP, SIGINT: passed on to the agent, whose exit then ends launch).
 */
export async function runAgent ({ name, recipe, wiring, rest, home, stderr }: AgentRun): Promise<number> {
  const note = (line: string): void => { stderr.write(`llamagate launch: ${line}\n`) }
  const busy = await recipe.busy?.(home)
  if (busy !== undefined) throw new UsageError(busy)
  for (const path of await removeOrphanedFolders()) note(`removed ${path}, left by a launch that was killed`)
  const dir = await settingsFolder(name)
  let merge: Merge | undefined
  try {
    await writeSettings(recipe, wiring, dir)
    if (recipe.merged !== undefined) merge = await mergeSettings(name, recipe.merged, wiring, home, note)
    const env = agentEnv(recipe, wiring, dir)
    try {
      return await spawnAgent(recipe, [...recipe.args(wiring, dir), ...rest], env, note, (pid) => merge?.started(pid))
    } finally {
      // Before the settings go back: the service it ends was started from them.
      if (recipe.afterExit !== undefined) await runQuietly(recipe.command, [...recipe.afterExit], env)
    }
  } finally {
    await merge?.restore(note)
    await rm(dir, { recursive: true, force: true })
  }
}

/** A short command of the agent's own, its output dropped: it reports on what launch then says nothing about. */
function runQuietly (command: string, args: string[], env: Record<string, string>): Promise<void> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { stdio: 'ignore', env: { ...process.env, ...env } })
    child.once('error', () => resolve())
    child.once('exit', () => resolve())
  })
}

function spawnAgent (recipe: AgentRecipe, args: string[], env: Record<string, string>, note: (line: string) => void, started: (pid: number) => void): Promise<number> {
  return new Promise<number>((resolve) => {
    const child = spawn(recipe.command, args, { stdio: 'inherit', env: { ...process.env, ...env } })
    child.once('spawn', () => started(child.pid!))
    // A terminal's Ctrl-C reaches the agent by itself (same process group); a signal sent to launch alone is passed
    // on. Either way launch waits for the agent to end, then cleans up.
    const forward = (signal: NodeJS.Signals): void => {
      if (signal !== 'SIGINT' || process.stdin.isTTY !== true) child.kill(signal)
    }
    const signals: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP']
    for (const signal of signals) process.on(signal, forward)
    const done = (code: number): void => {
      for (const signal of signals) process.off(signal, forward)
      resolve(code)
    }
    child.once('error', (err: NodeJS.ErrnoException) => {
      note(err.code === 'ENOENT'
        ? `${recipe.command} is not installed (or not on PATH): npm install -g ${recipe.npmPackage}`
        : `could not start ${recipe.command}: ${err.message}`)
      done(127)
    })
    child.once('exit', (code, signal) => done(code ?? (signal !== null ? 128 + constants.signals[signal] : 1)))
  })
}
