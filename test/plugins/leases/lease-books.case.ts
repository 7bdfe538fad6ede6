// A lease's books tell its source, as the place goes back, what the request was served: the source's speeds (the
// scheduler's estimate of prompt and generation rates) come from them, once the runtime's answer counted its tokens.
import t from 'tap'
import { EventHub } from '../../../core/base/event-hub.js'
import type { RequestUsage } from '../../../core/base/request-usage.js'
import { grantLease, type ServedTokens } from '../../../plugins/leases/lease-terms.js'
import type { LeaseEvents } from '../../../plugins/leases/lease-events.js'
import type { ModelEndpoint } from '../../../runtimes/index.js'

/** A place granted now, on a request that asked `waitedMs` ago; what its release hears is kept in `released`. */
function granted (usage: RequestUsage | undefined, waitedMs: number, released: Array<{ heldMs: number, served: ServedTokens | undefined }>) {
  return grantLease({
    model: { name: 'm', format: 'gguf', size: 0 },
    endpoint: {} as ModelEndpoint,
    sampling: {},
    contextLength: 512,
    started: performance.now() - waitedMs,
    usage,
    signal: new AbortController().signal,
    clientSignal: undefined,
    events: new EventHub<LeaseEvents>(() => {}),
    fitPrompt: async () => ({ grown: false, limit: 512, why: '' }),
    release: (heldMs, served) => { released.push({ heldMs, served }) },
  })
}

t.test('the release hears the tokens evaluated and generated, and the first token counted from the grant', async (t) => {
  const usage: RequestUsage = { promptTokens: 0, generatedTokens: 0 }
  const released: Array<{ heldMs: number, served: ServedTokens | undefined }> = []
  const lease = granted(usage, 50, released)
  lease.firstToken()
  lease.countTokens(20, 5, 4)
  lease.release()
  lease.release()
  t.equal(released.length, 1, 'the place goes back once')
  const [{ heldMs, served }] = released as [typeof released[0]]
  t.match(served, { evaluated: 16, generated: 5 }, 'the prompt less what the cache held, and what was generated')
  // The first token came at once after the grant: its delay leaves out the 50 ms the request waited in line.
  t.ok(served!.firstTokenAfterMs! >= 0 && served!.firstTokenAfterMs! <= heldMs, `first token after ${served!.firstTokenAfterMs} ms of ${heldMs} held`)
  t.ok(usage.firstTokenMs! >= 50, 'the usage record counts it from the ask')
})

t.test('nothing served is told where the answer never counted its tokens, or there is no usage record', async (t) => {
  const released: Array<{ heldMs: number, served: ServedTokens | undefined }> = []
  granted({ promptTokens: 0, generatedTokens: 0 }, 0, released).release()
  granted(undefined, 0, released).release()
  t.same(released.map((r) => r.served), [undefined, undefined])
})
