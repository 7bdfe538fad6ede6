import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { Test } from 'tap'
import { PACKAGE_ROOT } from '../../core/paths.js'
import { serveRealisticModels, type InferenceServer } from './inference.js'

// The requests Claude Code, opencode and Qwen Code sent (test/fixtures/agents: 7k-17k tokens of system prompt and
// tools each, streamed), replayed to a real gateway with the shipped context of 4096 and the agent fixture: a
// first turn gets a tool call in the agent's own shapes, the turn with the tool's result gets a short answer that
// ends it. The model is named as they named it (`stub-model`), through an alias. Each surface's test replays its
// agents: Claude Code's in test/plugins/anthropic-api, opencode's and Qwen Code's (and Codex's, on /v1/responses)
// in test/plugins/openai-api.

export interface Capture { url: string, headers: Record<string, string>, body: Record<string, unknown> }

/** The captured request of `agent` (its folder under test/fixtures/agents) for `turn` (`first-turn`, `tool-result`). */
export async function capture (agent: string, turn: string): Promise<Capture> {
  return JSON.parse(await readFile(join(PACKAGE_ROOT, 'test/fixtures/agents', agent, `${turn}.json`), 'utf8')) as Capture
}

/** Sends a captured request (its own headers but the key) and reads the SSE answer into its events' data. */
export async function replay (url: string, request: Capture): Promise<Array<Record<string, any>>> {
  const headers = Object.fromEntries(Object.entries(request.headers).filter(([k]) => !/^(x-api-key|authorization|accept-encoding)$/i.test(k)))
  const res = await fetch(`${url}${request.url}`, { method: 'POST', headers, body: JSON.stringify(request.body) })
  if (res.status !== 200) throw new Error(`${request.url} answered ${res.status}: ${await res.text()}`)
  return (await res.text()).split('\n').filter((l) => l.startsWith('data: ') && l !== 'data: [DONE]').map((l) => JSON.parse(l.slice(6)) as Record<string, any>)
}

/** The gateway with the agent fixture as `llamagate/agent`, aliased `stub-model`, at the shipped context of 4096. */
export function serveAgentModel (t: Test): Promise<InferenceServer> {
  return serveRealisticModels(t, { 'llamagate/agent': 'agent' }, {
    default_options: { num_ctx: 4096, num_parallel: 1, max_tokens: undefined },
    models: { 'llamagate/agent': { aliases: ['stub-model'] } },
  })
}
