import t from 'tap'
import { ConfigError, resolveConfig } from '../../../../core/platform/config.js'
import { MessagesSupport } from '../../../../plugins/upstreams/detours/messages-via-chat.js'

// config.yaml's `upstreams[].messages`: how Anthropic Messages requests reach an upstream.

const load = (upstreams: unknown[]) => resolveConfig([{ source: 'config.yaml', values: { upstreams } }])

t.test('messages: auto, native or convert; unset is auto', async (t) => {
  const config = load([
    { name: 'a', url: 'http://h:1', kind: 'openai', messages: 'convert' },
    { name: 'b', url: 'http://h:2', kind: 'llamagate', messages: 'native' },
    { name: 'c', url: 'http://h:3', kind: 'ollama', messages: 'auto' },
    { name: 'd', url: 'http://h:4', kind: 'openai' },
  ])
  t.same(config.upstreams.map((u) => u.messages), ['convert', 'native', 'auto', undefined])
  t.same(config.upstreams.map((u) => MessagesSupport.of(u).mode), ['convert', 'native', 'auto', 'auto'])
})

t.test('refused: another value, or another type', async (t) => {
  for (const messages of ['sometimes', true, 'Convert']) {
    const mistake = [{ name: 'a', url: 'http://h:1', kind: 'openai', messages }]
    t.throws(() => load(mistake), ConfigError)
    t.throws(() => load(mistake), /upstreams\.0\.messages = .* is not allowed: must be one of "auto", "native", "convert"/)
  }
})
