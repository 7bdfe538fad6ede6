// KeyQuotas on a clock of the test's own: the windows and waits to the second, without waiting a minute or a day.
import t from 'tap'
import { TooManyRequestsError } from '../../../core/base/errors.js'
import { KeyQuotas, nextUtcMidnight } from '../../../plugins/quotas/key-quotas.js'

const NOON = Date.UTC(2025, 0, 31, 12, 0, 0)

function quotas (tokens: Record<string, number> = {}): { quotas: KeyQuotas, clock: { now: number } } {
  const clock = { now: NOON }
  return { clock, quotas: new KeyQuotas({ tokensToday: (key) => tokens[key] ?? 0, now: () => clock.now }) }
}

/** The 429 `fn` throws: its status, Retry-After and message. */
function refusal (fn: () => unknown): { status: number, retryAfter: string | undefined, message: string } {
  try {
    fn()
  } catch (err) {
    if (!(err instanceof TooManyRequestsError)) throw err
    return { status: err.statusCode, retryAfter: err.headers['Retry-After'], message: err.message }
  }
  throw new Error('admitted, not refused')
}

t.test('concurrent: the key\'s requests in flight; one ending lets the next in, and ending twice frees one slot only', async (t) => {
  const { quotas: q } = quotas()
  const alice = { name: 'alice', limits: { concurrent: 2 } }
  const first = q.admit(alice)
  q.admit(alice)
  t.same(refusal(() => q.admit(alice)), {
    status: 429, retryAfter: '1',
    message: 'the API key "alice" has 2 requests running, at its limit of 2 (limits.concurrent in the keys file); retry when one ends',
  })
  t.doesNotThrow(() => q.admit({ name: 'bob', limits: { concurrent: 2 } }), 'another key counts on its own')
  first.end()
  first.end()
  q.admit(alice)
  t.equal(refusal(() => q.admit(alice)).status, 429, 'one ended, one came in: full again')
})

t.test('requests_per_minute: a sliding window; Retry-After is when its oldest request leaves it; refusals do not count', async (t) => {
  const { quotas: q, clock } = quotas()
  const rpm = { name: 'rpm', limits: { requests_per_minute: 2 } }
  q.admit(rpm).end()
  clock.now += 10_000
  q.admit(rpm).end()
  clock.now += 10_000
  t.same(refusal(() => q.admit(rpm)), {
    status: 429, retryAfter: '40',
    message: 'the API key "rpm" made 2 requests in the last minute, at its limit of 2 (limits.requests_per_minute in the keys file); retry in 40 s',
  })
  clock.now += 39_000
  t.equal(refusal(() => q.admit(rpm)).retryAfter, '1')
  clock.now += 1_000
  t.doesNotThrow(() => q.admit(rpm), 'the first request is a minute old: one more fits')
  t.equal(refusal(() => q.admit(rpm)).retryAfter, '10', 'now the second one is the oldest in the window')
})

t.test('tokens_per_day: refused from the limit on, until 00:00 UTC; checked before the other limits', async (t) => {
  const { quotas: q } = quotas({ heavy: 1000, light: 999 })
  const limits = { tokens_per_day: 1000, concurrent: 1 }
  q.admit({ name: 'heavy', limits: { concurrent: 1 } })
  t.same(refusal(() => q.admit({ name: 'heavy', limits })), {
    status: 429, retryAfter: String(12 * 3600),
    message: 'the API key "heavy" used 1000 tokens today (UTC), reaching its limit of 1000 (limits.tokens_per_day in the keys file); retry after 00:00 UTC',
  }, 'the day\'s limit, not the running request, is what it hears')
  t.doesNotThrow(() => q.admit({ name: 'light', limits }), 'below the limit it passes')
  t.equal(nextUtcMidnight(NOON), Date.UTC(2025, 1, 1))
  t.equal(nextUtcMidnight(Date.UTC(2025, 1, 1)), Date.UTC(2025, 1, 2), 'at midnight itself: the next one')
})

t.test('tokens_per_day holds against requests in flight: each reserves its prompt and cap, lowered to what the day has left', async (t) => {
  const { quotas: q } = quotas({ day: 100 })
  const limits = { tokens_per_day: 1000 }
  const first = q.admit({ name: 'day', limits })
  t.equal(first.reserve(50, 400), 400, 'room for all it asks: its own cap')
  t.equal(q.reservedBy('day'), 450)
  const big = q.admit({ name: 'day', limits })
  t.same(refusal(() => big.reserve(500, 10)), {
    status: 429, retryAfter: '1',
    message: 'the API key "day" used 100 tokens today (UTC) and its running requests hold 450 more of its limit of 1000 (limits.tokens_per_day in the keys file), leaving 450 for a prompt of about 500 tokens; retry when one of them ends',
  }, 'its prompt does not fit beside the running one: a wait of about one request')
  big.end()
  const second = q.admit({ name: 'day', limits })
  t.equal(second.reserve(50, 800), 400, 'lowered to the 400 left after its prompt of 50')
  t.equal(q.reservedBy('day'), 900)
  t.same(refusal(() => q.admit({ name: 'day', limits })), {
    status: 429, retryAfter: '1',
    message: 'the API key "day" used 100 tokens today (UTC) and its running requests hold 900 more of its limit of 1000 (limits.tokens_per_day in the keys file), leaving 0; retry when one of them ends',
  }, 'nothing left while the others run: the door refuses')
  first.end()
  t.equal(q.reservedBy('day'), 450, 'an ended request\'s reservation goes')
  const fourth = q.admit({ name: 'day', limits })
  t.equal(fourth.reserve(20, -1), 430, 'no cap asked: what is left after its prompt')
  t.equal(fourth.reserve(20, 100), 100, 'reserved again after a refit: the new reservation replaces the old')
  t.equal(q.reservedBy('day'), 450 + 120)
  t.equal(q.admit({ name: 'day', limits }).reserve(30, 0), 0, 'an embedding reserves its prompt only')
})

t.test('tokens_per_day: a prompt that does not fit in what is left is refused until 00:00 UTC, whatever it asks', async (t) => {
  const { quotas: q } = quotas({ day: 990 })
  const admitted = q.admit({ name: 'day', limits: { tokens_per_day: 1000 } })
  t.same(refusal(() => admitted.reserve(10, 5)), {
    status: 429, retryAfter: String(12 * 3600),
    message: 'the API key "day" used 990 tokens today (UTC) of its limit of 1000 (limits.tokens_per_day in the keys file): this request\'s prompt, about 10 tokens, does not fit in the 10 left; retry after 00:00 UTC',
  })
  t.equal(admitted.reserve(9, 5), 1, 'a prompt that leaves one token to generate is let in with that one')
  admitted.end()
  t.equal(admitted.reserve(5, 5), 5, 'an ended admission reserves nothing')
  t.equal(q.reservedBy('day'), 0)
})
