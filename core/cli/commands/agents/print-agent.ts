import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { AgentRecipe, AgentWiring } from './recipe.js'
import { agentEnv } from './run-agent.js'
import { settingsFolder, writeSettings } from './settings-folder.js'

/**
 * `launch --print`: what a start would set, as lines a shell runs. Settings files are written (as a start would)
 * into a private folder that is kept, so the printed variables point at files that exist; their content is shown as
 * comments. A merged file is shown, not written: the user's file stays as it is.
 */
export async function printAgent (name: string, recipe: AgentRecipe, wiring: AgentWiring, rest: string[], home: string, stdout: NodeJS.WritableStream): Promise<void> {
  const dir = recipe.files !== undefined ? await settingsFolder(name, 'print') : '<no folder: none is needed>'
  const files = recipe.files !== undefined ? await writeSettings(recipe, wiring, dir) : []
  if (files.length > 0) stdout.write(`# settings written to ${dir} (mode 600, kept: remove it when done)\n`)
  for (const [file, content] of files) stdout.write(`# ${file}:\n${commented(content)}`)
  if (recipe.merged !== undefined) {
    const file = join(home, recipe.merged.path)
    stdout.write(`# a start merges this into ${file} (yours backed up, put back when ${name} exits; not written now):\n`)
    const existing = await readFile(file, 'utf8').catch(() => undefined)
    stdout.write(commented(recipe.merged.apply(existing, wiring)))
  }
  for (const [key, value] of Object.entries(agentEnv(recipe, wiring, dir))) stdout.write(`export ${key}=${shellQuote(value)}\n`)
  stdout.write(`${[recipe.command, ...recipe.args(wiring, dir), ...rest].map(shellQuote).join(' ')}\n`)
}

function commented (text: string): string {
  return text.split('\n').map((line) => `#   ${line}\n`).join('')
}

export function shellQuote (text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replace(/'/g, "'\\''")}'`
}
