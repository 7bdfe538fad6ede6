import { ccr } from './ccr.js'
import { claude } from './claude.js'
import { cline } from './cline.js'
import { codex } from './codex.js'
import { copilot } from './copilot.js'
import { kilo } from './kilo.js'
import { openclaw } from './openclaw.js'
import { opencode } from './opencode.js'
import { pi } from './pi.js'
import { qwen } from './qwen.js'
import type { AgentRecipe } from './recipe.js'

export type { AgentRecipe, AgentWiring, MergedSettings } from './recipe.js'

/** The agents `llamagate launch` wires up, by the name it takes; one file each, in this folder. */
export const AGENTS: Readonly<Record<string, AgentRecipe>> = {
  ccr,
  claude,
  cline,
  codex,
  copilot,
  kilo,
  openclaw,
  opencode,
  pi,
  qwen,
}
