import t from 'tap'
import { capture, promptUsage, replay, replaySession, serveAgentModel } from '../../helpers/agent-replay.js'
import { sharedServer } from '../../helpers/inference.js'

// Claude Code's captured turns replayed to a real gateway (test/helpers/agent-replay.ts): a tool_use block, then,
// with the tool's result, an answer that ends the turn; then its session of six requests, whose system messages
// come among the others, down to a "tokens left" reminder after each later tool result.
const server = sharedServer(() => serveAgentModel(t))

t.test('Claude Code\'s captured turns: a tool call, then an answer that ends the turn', async (t) => {
  const { url } = await server()

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
})

t.test('Claude Code\'s session: each follow-up reads the turn before from the cache, loaded and after a swap', async (t) => {
  const agent = await server()
  const loaded = await replaySession(t, agent, 'claude')
  const swapped = await replaySession(t, agent, 'claude', { swap: true })
  t.comment(`claude loaded: ${JSON.stringify(loaded)}`)
  t.comment(`claude after a swap: ${JSON.stringify(swapped)}`)
})

t.test('a new conversation reuses the system prompt and tools: the attribution line that differs goes', async (t) => {
  const agent = await server()
  const first = await capture('claude', 'first-turn')
  // Another conversation: another first message, so another digest after the version (`.c8e` here), as Claude Code
  // computes it; its native build also stamps each request (`cch=`).
  const body = structuredClone(first.body) as { system: Array<{ text: string }>, messages: Array<{ content: Array<{ text: string }> }> }
  body.system[0]!.text = 'x-anthropic-billing-header: cc_version=2.1.331.4b0; cc_entrypoint=cli; cch=9d2f1;'
  body.messages[0]!.content[1]!.text = 'What does the README of this project say?'
  await replay(agent.url, first)
  const other = promptUsage(await replay(agent.url, { ...first, body }))
  // Both conversations' prompts open with the system prompt and the tools; they part at the user's first message.
  const count = await fetch(`${agent.url}/v1/messages/count_tokens`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'stub-model', system: body.system, tools: (first.body as { tools: unknown }).tools, messages: [{ role: 'user', content: '.' }] }) })
  const { input_tokens: shared } = await count.json() as { input_tokens: number }
  t.ok(other.cached >= 0.9 * shared, `${other.cached} of ${other.prompt} prompt tokens from the other conversation's cache (the system prompt and tools: about ${shared})`)
})
