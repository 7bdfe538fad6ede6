import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { Test } from 'tap'
import { PACKAGE_ROOT } from '../../core/base/paths.js'
import { post, serveRealisticModels, type InferenceServer } from './inference.js'
import type { REALISTIC } from './realistic-models.js'
import { until } from './until.js'

// The requests Claude Code, opencode, Qwen Code and Codex sent (test/fixtures/agents: 6k-17k tokens of system prompt
// and tools each, streamed), replayed to a real gateway with the shipped context of 4096 and the agent fixture: a
// first turn gets a tool call in the agent's own shapes, the turn with the tool's result gets a short answer that
// ends it. The model is named as they named it (`stub-model`), through an alias. Each surface's test replays its
// agents: Claude Code's in test/plugins/anthropic-api, opencode's, Qwen Code's and Codex's in test/plugins/openai-api.
// A session (`session`) is those two captured requests and four more, each the one before with later turns added
// (test/fixtures/agents/README.md).

export interface Capture { url: string, headers: Record<string, string>, body: Record<string, unknown> }

/** The agents with captures, and the names of their first two requests. */
const CAPTURED: Readonly<Record<string, readonly [string, string]>> = {
  claude: ['first-turn', 'tool-result'],
  opencode: ['first-turn', 'tool-result'],
  qwen: ['first-turn', 'tool-result'],
  codex: ['tool-turn1', 'tool-turn2'],
}

/** The captured request of `agent` (its folder under test/fixtures/agents) for `turn` (`first-turn`, `tool-result`). */
export async function capture (agent: string, turn: string): Promise<Capture> {
  const { url, headers, body } = JSON.parse(await readFile(join(PACKAGE_ROOT, 'test/fixtures/agents', agent, `${turn}.json`), 'utf8')) as Capture
  return { url, headers, body }
}

/**
 * An agent's session of six requests: its two captured ones, then four made from the second by adding each later
 * turn's messages (its session.json), as the agent adds them: the conversation's list grows at its end, and Claude
 * Code marks only the last message for Anthropic's cache (its last block; a string content becomes a text block).
 */
export async function session (agent: string): Promise<Capture[]> {
  const [first, second] = CAPTURED[agent]!
  const captured = [await capture(agent, first), await capture(agent, second)]
  const { turns } = JSON.parse(await readFile(join(PACKAGE_ROOT, 'test/fixtures/agents', agent, 'session.json'), 'utf8')) as { turns: unknown[][] }
  const list = agent === 'codex' ? 'input' : 'messages'
  const requests = [...captured]
  let items = captured[1]!.body[list] as unknown[]
  for (const added of turns) {
    items = [...items, ...added]
    const body = { ...captured[1]!.body, [list]: agent === 'claude' ? markedLast(items as ClaudeMessage[]) : items }
    requests.push({ ...captured[1]!, body })
  }
  return requests
}

type ClaudeMessage = { role: string, content: string | Array<Record<string, unknown>> }

/** Claude Code's cache marks: `cache_control` on the last message's last block and nowhere else in the messages. */
function markedLast (messages: ClaudeMessage[]): ClaudeMessage[] {
  return messages.map((m, i) => {
    const blocks = typeof m.content === 'string' ? null : m.content.map(({ cache_control: _, ...block }) => block)
    if (i < messages.length - 1) return { ...m, content: blocks ?? m.content }
    const last = blocks ?? [{ type: 'text', text: m.content as string }]
    return { ...m, content: [...last.slice(0, -1), { ...last.at(-1), cache_control: { type: 'ephemeral' } }] }
  })
}

/** Sends a captured request (its own headers but the key and the stub's host and length) and reads the SSE answer into its events' data. */
export async function replay (url: string, request: Capture): Promise<Array<Record<string, any>>> {
  const headers = Object.fromEntries(Object.entries(request.headers).filter(([k]) => !/^(x-api-key|authorization|accept-encoding|host|content-length)$/i.test(k)))
  const res = await fetch(`${url}${request.url}`, { method: 'POST', headers, body: JSON.stringify(request.body) })
  if (res.status !== 200) throw new Error(`${request.url} answered ${res.status}: ${await res.text()}`)
  return (await res.text()).split('\n').filter((l) => l.startsWith('data: ') && l !== 'data: [DONE]').map((l) => JSON.parse(l.slice(6)) as Record<string, any>)
}

/** A streamed answer's prompt tokens and, of those, the ones the runtime took from its cache, as each API says them. */
export function promptUsage (events: Array<Record<string, any>>): { prompt: number, cached: number } {
  for (const e of events) {
    // Anthropic: message_start; input_tokens are the ones not read from the cache.
    const started = e.type === 'message_start' ? e.message?.usage : undefined
    if (started !== undefined) return { prompt: started.input_tokens + started.cache_read_input_tokens, cached: started.cache_read_input_tokens }
    // Responses: response.completed.
    const done = e.type === 'response.completed' ? e.response?.usage : undefined
    if (done !== undefined) return { prompt: done.input_tokens, cached: done.input_tokens_details.cached_tokens }
    // Chat completions: the last chunk, with stream_options.include_usage.
    if (e.usage?.prompt_tokens !== undefined) return { prompt: e.usage.prompt_tokens, cached: e.usage.prompt_tokens_details?.cached_tokens ?? 0 }
  }
  throw new Error(`no prompt usage in the answer: ${JSON.stringify(events.at(-1))}`)
}

/** The model the replays run on, as the agents name it, and the one a swap loads instead. */
export const AGENT_MODEL = 'llamagate/agent'
const OTHER_MODEL = 'llamagate/other'

export interface AgentServer extends InferenceServer {
  /**
   * Loads another model in its place (max_loaded_models 1): the agent model stops, its slot saved to the prompt-cache
   * folder (or, when a save of the same conversation already holds it, that save kept instead), and the next request
   * for it loads it again with that slot restored. Resolves once the agent model is no longer loaded.
   */
  swap(): Promise<void>
  /** Unloads the agent model (`/api/stop`): the same end path as a swap's, its slot saved, without another load. */
  unload(): Promise<void>
  /** How many times the agent model's slots were restored from a save. */
  restored(): number
}

/**
 * The gateway with a chat fixture (`kind`, the agent fixture unless told) as `llamagate/agent`, aliased `stub-model`,
 * at the shipped context of 4096, one model loaded at a time, and another small model to swap it out with.
 */
export async function serveAgentModel (t: Test, kind: keyof typeof REALISTIC = 'agent'): Promise<AgentServer> {
  const server = await serveRealisticModels(t, { [AGENT_MODEL]: kind, [OTHER_MODEL]: 'qwen25' }, {
    default_options: { num_ctx: 4096, num_parallel: 1, max_tokens: undefined },
    limits: { max_loaded_models: 1 },
    models: { [AGENT_MODEL]: { aliases: ['stub-model'] } },
  })
  let restored = 0
  server.app.promptCache!.events.on('restored', (model) => { if (model === AGENT_MODEL) restored++ })
  const loaded = async (): Promise<string[]> => ((await (await fetch(`${server.url}/api/ps`)).json()) as { models: Array<{ name: string }> }).models.map((m) => m.name)
  return {
    ...server,
    async swap () {
      const res = await post(`${server.url}/v1/chat/completions`, { model: OTHER_MODEL, messages: [{ role: 'user', content: 'hi' }], max_tokens: 1 })
      if (res.status !== 200) throw new Error(`the swap's request answered ${res.status}: ${await res.text()}`)
      // Its stop waits for its saves: gone from /api/ps, its slot is on disk.
      await until('the agent model unloaded for the other', async () => !(await loaded()).includes(AGENT_MODEL))
    },
    async unload () {
      const res = await post(`${server.url}/api/stop`, { model: AGENT_MODEL })
      if (res.status !== 200) throw new Error(`/api/stop answered ${res.status}: ${await res.text()}`)
    },
    restored: () => restored,
  }
}

/** One request of a session: the prompt's tokens and those read from the cache. */
export interface TurnFigures { prompt: number, cached: number }

/**
 * Replays an agent's session (`session`) on `server`, turn after turn; with `swap`, the agent model is swapped out
 * before the first follow-up and unloaded before each later one (its slot saved either way, then restored when the
 * follow-up loads it again; an unload takes the same end path as a swap without the other model's load). Checks that each
 * follow-up read at least 90% of the previous request's prompt from the cache (the conversation's start did not
 * change under it), and returns every turn's figures.
 */
export async function replaySession (t: Test, server: AgentServer, agent: string, options: { swap?: boolean } = {}): Promise<TurnFigures[]> {
  const figures: TurnFigures[] = []
  for (const [i, request] of (await session(agent)).entries()) {
    if (i > 0 && options.swap === true) {
      const restored = server.restored()
      await (i === 1 ? server.swap() : server.unload())
      figures.push(promptUsage(await replay(server.url, request)))
      t.equal(server.restored(), restored + 1, `${agent} turn ${i + 1}: the saved slot restored`)
    } else figures.push(promptUsage(await replay(server.url, request)))
    const now = figures[i]!
    if (i === 0) continue
    const before = figures[i - 1]!
    t.ok(now.cached >= 0.9 * before.prompt, `${agent} turn ${i + 1}${options.swap === true ? ' after a swap' : ''}: ${now.cached} of ${now.prompt} prompt tokens from the cache (the turn before: ${before.prompt})`)
  }
  return figures
}
