import { randomBytes } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { isAlive } from '../../../base/process-alive.js'
import { UsageError } from '../../../platform/usage-error.js'
import { claude } from './claude.js'
import type { AgentRecipe, AgentWiring } from './recipe.js'

/** Where Claude Code Router reads its config, and nowhere else (its shared constants: os.homedir() joined, no variable). */
const CONFIG = '.claude-code-router/config.json'
/** The service's pid while it runs (same constants). */
const PID_FILE = '.claude-code-router/.claude-code-router.pid'
/** Every route CCR picks a model for (its MODEL_TYPES): all to this server, none to a provider of the user's elsewhere. */
const ROUTES = ['default', 'background', 'think', 'longContext', 'webSearch', 'image']

interface RouterConfig { Providers?: unknown, Router?: Record<string, unknown>, [key: string]: unknown }

/**
 * The user's config with a `llamagate` provider of OpenAI's chat completions (CCR's own wire for every provider it
 * does not transform otherwise) and every route on it. The key stays out of the file: CCR substitutes
 * `$LLAMAGATE_API_KEY` from its environment when it reads the config.
 */
export function mergeRouterConfig (existing: string | undefined, { url, model }: AgentWiring): string {
  let theirs: RouterConfig = {}
  if (existing !== undefined && existing.trim() !== '') {
    try {
      theirs = JSON.parse(existing) as RouterConfig
    } catch {
      throw new UsageError(`~/${CONFIG} is not plain JSON (comments?): launch merges only JSON; make it JSON or move it aside`)
    }
    if (theirs === null || typeof theirs !== 'object' || Array.isArray(theirs)) throw new UsageError(`~/${CONFIG} is not a JSON object`)
  }
  const providers = (Array.isArray(theirs.Providers) ? theirs.Providers as Array<{ name?: unknown }> : []).filter((p) => p?.name !== 'llamagate')
  const route = `llamagate,${model}`
  return `${JSON.stringify({
    ...theirs,
    Providers: [...providers, { name: 'llamagate', api_base_url: `${url}/v1/chat/completions`, api_key: '$LLAMAGATE_API_KEY', models: [model] }],
    Router: { ...(theirs.Router ?? {}), ...Object.fromEntries(ROUTES.map((r) => [r, route])) },
    // Its proxy on 127.0.0.1:3456 asks no key unless APIKEY is set, and forwards with ours: any local user could use
    // llamagate through it while it runs. A key for this run (`ccr code` hands it to Claude Code), yours if you set one.
    APIKEY: theirs.APIKEY ?? '$LLAMAGATE_CCR_KEY',
  }, null, 2)}\n`
}

/**
 * Claude Code Router (`ccr code`: Claude Code through CCR's own proxy, which it starts from its config). CCR reads
 * only ~/.claude-code-router/config.json, so launch merges its provider into that file (yours backed up, put back
 * after). `ccr code` leaves the service it started running (its exit handler does not wait for the stop), so launch
 * runs `ccr stop` when Claude Code exits; and a service already running would keep its own config, so launch
 * refuses then. Claude Code, started by CCR with launch's environment, gets the model's window and output limit
 * through its own variables.
 */
export const ccr: AgentRecipe = {
  title: 'Claude Code Router',
  command: 'ccr',
  npmPackage: '@musistudio/claude-code-router',
  env: ({ key, contextLength, outputLimit }) => ({
    LLAMAGATE_API_KEY: key,
    LLAMAGATE_CCR_KEY: `ccr-${randomBytes(24).toString('base64url')}`,
    CLAUDE_CODE_MAX_OUTPUT_TOKENS: String(outputLimit),
    ...(contextLength !== null ? { CLAUDE_CODE_AUTO_COMPACT_WINDOW: String(contextLength) } : {}),
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
  }),
  switches: claude.switches,
  args: () => ['code'],
  merged: { path: CONFIG, apply: mergeRouterConfig },
  busy: async (home) => {
    const pid = Number.parseInt(await readFile(join(home, PID_FILE), 'utf8').catch(() => ''), 10)
    return isAlive(pid)
      ? `a Claude Code Router service is running (pid ${pid}) with its own config, which ccr code would use: stop it (ccr stop) and launch again`
      : undefined
  },
  afterExit: ['stop'],
}
