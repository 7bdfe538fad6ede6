import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { PACKAGE_ROOT } from '../../../core/paths.js'
import { serveRealisticModels } from '../../helpers/inference.js'

// The requests Claude Code, opencode and Qwen Code sent (test/fixtures/agents: 7k-17k tokens of system prompt and
// tools each, streamed), replayed to a real gateway with the shipped context of 4096 and the agent fixture: a
// first turn gets a tool call in the agent's own shapes, the turn with the tool's result gets a short answer that
// ends it. The model is named as they named it (`stub-model`), through an alias. (Codex's, on /v1/responses, are
// replayed in test/plugins/openai-api.)

interface Capture { url: string, headers: Record<string, string>, body: Record<string, unknown> }

async function capture (agent: string, turn: string): Promise<Capture> {
  return JSON.parse(await readFile(join(PACKAGE_ROOT, 'test/fixtures/agents', agent, `${turn}.json`), 'utf8')) as Capture
}

/** Sends a captured request (its own headers but the key) and reads the SSE answer into its events' data. */
async function replay (url: string, request: Capture): Promise<Array<Record<string, any>>> {
  const headers = Object.fromEntries(Object.entries(request.headers).filter(([k]) => !/^(x-api-key|authorization|accept-encoding)$/i.test(k)))
  const res = await fetch(`${url}${request.url}`, { method: 'POST', headers, body: JSON.stringify(request.body) })
  if (res.status !== 200) throw new Error(`${request.url} answered ${res.status}: ${await res.text()}`)
  return (await res.text()).split('\n').filter((l) => l.startsWith('data: ') && l !== 'data: [DONE]').map((l) => JSON.parse(l.slice(6)) as Record<string, any>)
}

t.test('agents\' captured turns: a tool call, then an answer that ends the turn', async (t) => {
  const { url } = await serveRealisticModels(t, { 'llamagate/agent': 'agent' }, {
    default_options: { num_ctx: 4096, num_parallel: 1, max_tokens: undefined },
    models: { 'llamagate/agent': { aliases: ['stub-model'] } },
  })

  // Claude Code: Anthropic's Messages, ?beta=true, a system message among the others, adaptive thinking.
  const claudeCall = await replay(url, await capture('claude', 'first-turn'))
  const started = claudeCall.find((e) => e.type === 'content_block_start' && e.content_block.type === 'tool_use')
  t.ok(started, 'Claude Code: a tool_use block')
  t.ok(['Bash', 'Read', 'Edit', 'Write', 'Agent', 'ListAgents', 'ReportFindings', 'ScheduleWakeup', 'Skill', 'ToolSearch', 'Workflow', 'DeferredToolPlaceholder'].includes(started?.content_block.name), `one of the tools it offered (${started?.content_block.name})`)
  t.equal(claudeCall.find((e) => e.type === 'message_delta')?.delta.stop_reason, 'tool_use')
  t.equal(claudeCall.at(-1)?.type, 'message_stop')
  const claudeDone = await replay(url, await capture('claude', 'tool-result'))
  t.equal(claudeDone.filter((e) => e.type === 'content_block_delta').map((e) => e.delta.text ?? '').join(''), 'Done', 'Claude Code: the answer after the tool result')
  t.equal(claudeDone.find((e) => e.type === 'message_delta')?.delta.stop_reason, 'end_turn', 'the turn ends (a max_tokens stop would be its error)')

  // opencode and Qwen Code: OpenAI's chat completions; Qwen's tool result is an array of parts.
  for (const agent of ['opencode', 'qwen']) {
    const call = await replay(url, await capture(agent, 'first-turn'))
    const calls = call.flatMap((e) => e.choices?.[0]?.delta?.tool_calls ?? [])
    t.ok(calls.some((c) => typeof c.function?.name === 'string'), `${agent}: a tool call`)
    t.equal(call.map((e) => e.choices?.[0]?.finish_reason).find((r) => r), 'tool_calls')
    const done = await replay(url, await capture(agent, 'tool-result'))
    t.equal(done.map((e) => e.choices?.[0]?.delta?.content ?? '').join(''), 'Done', `${agent}: the answer after the tool result`)
    t.equal(done.map((e) => e.choices?.[0]?.finish_reason).find((r) => r), 'stop', 'the turn ends')
    t.ok(done.some((e) => e.usage?.prompt_tokens > 4096), 'the whole prompt was read: the context grew to hold it')
  }
})
