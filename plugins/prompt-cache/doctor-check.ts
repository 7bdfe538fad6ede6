import { ok, warn, type Check } from '../../core/cli/commands/doctor-checks.js'
import type { Config } from '../../core/platform/config.js'
import { formatBytes } from '../../core/base/units.js'
import { PromptCacheFolder, promptCacheDir, type FolderSurvey } from './prompt-cache-folder.js'

const NAME = 'prompt cache'
/** Names listed per kind; the rest are counted. */
const LISTED = 5

/** What doctor --json says of the folder. */
export interface PromptCacheFindings { dir: string, saves: number, bytes: number, foreign: string[], damaged: string[] }

/**
 * Doctor's look at the prompt-cache folder, read only: the saves it holds, and what is there that the gateway did
 * not write (left alone and not counted) or that is damaged (deleted by the next start).
 */
export async function promptCacheCheck (config: Pick<Config, 'modelsDir' | 'promptCache'>): Promise<{ check: Check, found: PromptCacheFindings | null }> {
  if (!config.promptCache.enabled) return { check: ok(NAME, 'off (prompt_cache.enabled is false)'), found: null }
  const dir = promptCacheDir(config.modelsDir)
  let survey: FolderSurvey | null
  try {
    survey = await new PromptCacheFolder(dir).survey()
  } catch (err) {
    const why = (err as NodeJS.ErrnoException).code ?? (err as Error).message
    return { check: warn(NAME, `${dir} cannot be used (${why}): runtimes run without saved prompt caches`, `remove what is in its place, or let the gateway's user write there`), found: null }
  }
  if (survey === null) return { check: ok(NAME, `${dir}: not made yet (serve makes it)`), found: null }
  const bytes = survey.entries.reduce((sum, e) => sum + e.bytes, 0)
  const found = { dir, saves: survey.entries.length, bytes, foreign: survey.foreign, damaged: survey.damaged }
  const held = `${dir}: ${survey.entries.length} save${survey.entries.length === 1 ? '' : 's'}, ${formatBytes(bytes)} of ${formatBytes(config.promptCache.sizeBytes)}`
  const problems: string[] = []
  if (survey.foreign.length > 0 || survey.truncated) {
    problems.push(`${survey.truncated ? 'more than ' : ''}${names(survey.foreign)} the gateway did not write, left alone and not counted`)
  }
  if (survey.damaged.length > 0) problems.push(`${names(survey.damaged)} damaged, deleted at the next start`)
  if (problems.length === 0) return { check: ok(NAME, held), found }
  return { check: warn(NAME, `${held}; ${problems.join('; ')}`, `remove from ${dir} what you did not put there: the gateway neither reads nor deletes it`), found }
}

/** `3 files ("a", "b", "c")`, at most LISTED names, quoted: a planted name must not write escapes to a terminal. */
function names (files: string[]): string {
  const shown = files.slice(0, LISTED).map((f) => JSON.stringify(f)).join(', ')
  const more = files.length > LISTED ? ` and ${files.length - LISTED} more` : ''
  return `${files.length} file${files.length === 1 ? '' : 's'} (${shown}${more})`
}
