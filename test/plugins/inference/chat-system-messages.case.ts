// How a conversation's system messages reach the template (plugins/inference/chat-system-messages.ts and the
// Anthropic surface's messages-body.ts), and Claude Code's attribution line: the shapes alone, no runtime.
import t from 'tap'
import { placeSystem } from '../../../plugins/anthropic-api/messages-body.js'
import { withoutAttributionHeader } from '../../../plugins/inference/attribution-header.js'
import { placeSystemMessages } from '../../../plugins/inference/chat-system-messages.js'

t.test('the attribution line: gone with its fields, whatever follows kept', async (t) => {
  t.equal(withoutAttributionHeader('x-anthropic-billing-header: cc_version=2.1.331.c8e; cc_entrypoint=sdk-cli;'), '', 'a block of only that line')
  t.equal(withoutAttributionHeader('x-anthropic-billing-header: cc_version=2.1.101.e51; cc_entrypoint=cli; cch=a5145;\nYou are Claude Code.'), 'You are Claude Code.')
  t.equal(withoutAttributionHeader('x-anthropic-billing-header: cc_version=2.1.101.e51; cc_entrypoint=cli; cch=a5145; cc_workload=cron;You are Claude Code.'), 'You are Claude Code.', 'a system prompt glued on after the last field stays')
  t.equal(withoutAttributionHeader('You are Claude Code. x-anthropic-billing-header: cc_version=1;'), 'You are Claude Code. x-anthropic-billing-header: cc_version=1;', 'only at the start')
})

const late = [
  { role: 'system', content: 'x-anthropic-billing-header: cc_version=2.1.331.c8e; cc_entrypoint=cli; cch=00000;\nYou are an agent.' },
  { role: 'user', content: 'hi' },
  { role: 'system', content: [{ type: 'text', text: 'Environment: linux' }] },
  { role: 'assistant', content: 'ok' },
  { role: 'tool', content: 'output' },
  { role: 'system', content: '<total_tokens>100 tokens left</total_tokens>' },
  { role: 'user', content: 'go on' },
]

t.test('chat: in place, only the attribution line goes; as user, the opening folds and later ones become user text in place', async (t) => {
  t.same(placeSystemMessages(late, 'in-place'), [{ role: 'system', content: 'You are an agent.' }, ...late.slice(1)])
  t.same(placeSystemMessages(late, 'as-user'), [
    { role: 'system', content: 'You are an agent.\n\nEnvironment: linux' },
    { role: 'user', content: 'hi' },
    { role: 'assistant', content: 'ok' },
    { role: 'tool', content: 'output' },
    { role: 'user', content: '<system-reminder>\n<total_tokens>100 tokens left</total_tokens>\n</system-reminder>' },
    { role: 'user', content: 'go on' },
  ])
  const plain = [{ role: 'system', content: [{ type: 'text', text: 'a' }] }, { role: 'user', content: 'hi' }]
  t.equal(placeSystemMessages(plain, 'in-place'), plain, 'nothing to change: the list itself')
  t.same(placeSystemMessages(plain, 'as-user'), plain, 'one system message first: as sent, its parts too')
  t.same(placeSystemMessages([{ role: 'system', content: 'x-anthropic-billing-header: cc_version=1;' }, { role: 'user', content: 'hi' }], 'in-place'), [{ role: 'user', content: 'hi' }], 'a system message of only that line goes')
  t.same(placeSystemMessages([{ role: 'user', content: 'hi' }, { role: 'system', content: 'env' }], 'as-user'), [{ role: 'system', content: 'env' }, { role: 'user', content: 'hi' }], 'before any answer: the opening, into the system prompt')
})

t.test('Messages: the system prompt without the attribution line; system messages placed the same way', async (t) => {
  const body = {
    system: [{ type: 'text', text: 'x-anthropic-billing-header: cc_version=2.1.331.c8e; cc_entrypoint=sdk-cli;' }, { type: 'text', text: 'You are an agent.', cache_control: { type: 'ephemeral' } }],
    messages: [
      { role: 'user', content: 'hi' },
      { role: 'system', content: [{ type: 'text', text: 'first' }] },
      { role: 'assistant', content: 'ok' },
      { role: 'system', content: 'second' },
      { role: 'user', content: 'go on' },
    ],
  }
  const inPlace = placeSystem(body, 'in-place')
  t.same(inPlace.system, [{ type: 'text', text: 'You are an agent.', cache_control: { type: 'ephemeral' } }])
  t.equal(inPlace.messages, body.messages, 'the messages as sent')
  const asUser = placeSystem(body, 'as-user')
  t.same(asUser.system, [{ type: 'text', text: 'You are an agent.', cache_control: { type: 'ephemeral' } }, { type: 'text', text: 'first' }])
  t.same(asUser.messages, [
    { role: 'user', content: 'hi' },
    { role: 'assistant', content: 'ok' },
    { role: 'user', content: [{ type: 'text', text: '<system-reminder>\nsecond\n</system-reminder>' }] },
    { role: 'user', content: 'go on' },
  ])
  t.notOk('system' in placeSystem({ system: 'x-anthropic-billing-header: cc_version=1;', messages: [] }, 'in-place'), 'no system prompt rather than an empty one')
  const plain = { system: 'You are an agent.', messages: [{ role: 'user', content: 'hi' }] }
  t.equal(placeSystem(plain, 'as-user'), plain, 'nothing to change: the body itself')
})
