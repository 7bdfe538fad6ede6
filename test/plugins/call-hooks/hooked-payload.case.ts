import t from 'tap'
import { CallHooks } from '../../../core/platform/call-hook-registry.js'
import type { CallHook } from '../../../core/platform/call-hooks.js'
import { HookedCall } from '../../../plugins/call-hooks/hooked-call.js'
import type { Lease } from '../../../plugins/leases/lease.js'
import type { ModelEndpoint, RelayProgress, RelaySink } from '../../../runtimes/index.js'

// What a relayed request sends its model's server through the call hooks (plugins/call-hooks/hooked-call.ts): the
// payload as it was written where the `before` hooks left the request alone, written again only where they changed it.

// Spacing, a key order and a seed past 2^53 that a parse and a stringify would not keep.
const PAYLOAD = '{"model":"m", "stream":true,"seed":18446744073709551615,"messages":[{"role":"user","content":"hi"}],"temperature":0.5}'

async function sent (hook: Omit<CallHook, 'name'>): Promise<string> {
  const hooks = new CallHooks(1000)
  hooks.add({ name: 'test', ...hook })
  const call = new HookedCall({ hooks, surface: 'openai', route: '/v1/chat/completions', key: null, grant: null, log: { error: () => {} } }, 'm', true)
  let payload = ''
  const server = {
    relay: async (_path: string, body: string, sink: RelaySink) => {
      payload = body
      sink.open()
      sink.writeRaw(Buffer.from('data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'))
    },
  } as unknown as ModelEndpoint
  const lease = call.lease({ endpoint: server, signal: new AbortController().signal, release: () => {} } as unknown as Lease)
  const sink: RelaySink = { open: () => {}, chunkedSocket: () => null, writeRaw: () => true, drained: async () => {} }
  const progress: RelayProgress = { tailBytes: 256, tail: Buffer.alloc(0) }
  await lease.endpoint.relay('/v1/chat/completions', PAYLOAD, sink, progress, lease.signal)
  call.end()
  return payload
}

t.test('before hooks that change nothing: the payload goes byte for byte, also with hooks that read the answer', async (t) => {
  t.equal(await sent({ before () {} }), PAYLOAD, 'a before hook alone')
  t.equal(await sent({ before () {}, piece () {}, after () {} }), PAYLOAD, 'with piece and after hooks')
  t.equal(await sent({ async before (request) { request.options.temperature = 0.5 } }), PAYLOAD, 'an option set to what it was')
})

t.test('before hooks that change the request: it is written again, with the change', async (t) => {
  const edited = JSON.parse(await sent({ before (request) { request.options.temperature = 0.1 } })) as Record<string, unknown>
  t.equal(edited.temperature, 0.1, 'an option replaced')
  const inPlace = JSON.parse(await sent({ piece () {}, before (request) { (request.messages![0] as { content: string }).content = 'changed' } })) as { messages: Array<{ content: string }> }
  t.equal(inPlace.messages[0]!.content, 'changed', 'a message edited in place')
})
