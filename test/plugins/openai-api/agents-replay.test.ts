import t from 'tap'
import { capture, replay, replaySession, serveAgentModel } from '../../helpers/agent-replay.js'
import { sharedServer } from '../../helpers/inference.js'

// opencode's and Qwen Code's captured turns replayed to a real gateway (test/helpers/agent-replay.ts): a tool call,
// then, with the tool's result, an answer that ends the turn. Then their sessions of six requests, and Codex's on
// /v1/responses (its single turns: responses-codex.case.ts), each follow-up checked to read the turn before from the
// cache, with the model loaded and after a swap.
const server = sharedServer(() => serveAgentModel(t))

t.test('opencode\'s and Qwen Code\'s captured turns: a tool call, then an answer that ends the turn', async (t) => {
  const { url } = await server()

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

for (const agent of ['opencode', 'qwen', 'codex']) {
  t.test(`${agent}'s session: each follow-up reads the turn before from the cache, loaded and after a swap`, async (t) => {
    const served = await server()
    const loaded = await replaySession(t, served, agent)
    const swapped = await replaySession(t, served, agent, { swap: true })
    t.comment(`${agent} loaded: ${JSON.stringify(loaded)}`)
    t.comment(`${agent} after a swap: ${JSON.stringify(swapped)}`)
  })
}
