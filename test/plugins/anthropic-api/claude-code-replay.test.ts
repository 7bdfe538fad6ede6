import t from 'tap'
import { capture, replay, serveAgentModel } from '../../helpers/agent-replay.js'

// Claude Code's captured turn replayed to a real gateway (test/helpers/agent-replay.ts): a tool_use block, then,
// with the tool's result, an answer that ends the turn.
t.test('Claude Code\'s captured turns: a tool call, then an answer that ends the turn', async (t) => {
  const { url } = await serveAgentModel(t)

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
