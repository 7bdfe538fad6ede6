import t from 'tap'
import { UpstreamProbe } from '../../../plugins/upstreams/upstream-probe.js'
import { until } from '../../helpers/until.js'
import { fakeUpstream, json, upstream } from './fake-upstream.js'

// Whether an upstream answers, and with which models: down, backing off, back up, and asked again after a failure.

const KEY = 'sk-upstream-secret-0123'

/** A log that keeps its lines. */
function recordingLog () {
  const lines: Array<{ level: 'warn' | 'info', obj: object, msg: string }> = []
  return {
    lines,
    warn: (obj: object, msg: string) => { lines.push({ level: 'warn', obj, msg }) },
    info: (obj: object, msg: string) => { lines.push({ level: 'info', obj, msg }) },
  }
}

t.test('down (nothing listens): failing, no models, retried; back up on the same port: healthy, listeners told, logged once each way', async (t) => {
  // A free port, closed again: the upstream is down.
  const before = await fakeUpstream(t, () => {})
  await before.close()
  const log = recordingLog()
  const probe = new UpstreamProbe(upstream({ name: 'gpu-box', url: before.origin, kind: 'llamagate' }), { intervalMs: 30, maxBackoffMs: 30, log })
  t.teardown(() => probe.stop())
  let changes = 0
  probe.onChange(() => { changes++ })
  t.same(probe.state, { healthy: false, models: [], error: null, checkedAt: 0 }, 'nothing known before the first probe')
  probe.start()
  await until('the first probe failed', () => probe.state.checkedAt > 0)
  const first = probe.state.checkedAt
  t.equal(probe.state.healthy, false)
  t.same(probe.state.models, [])
  t.match(probe.state.error, /^upstream "gpu-box" \(GET http:\/\/127\.0\.0\.1:\d+\/api\/tags\) cannot be reached: .*ECONNREFUSED/)
  await until('a retry', () => probe.state.checkedAt > first)
  t.equal(changes, 0, 'still down: no change to tell')

  const up = await fakeUpstream(t, (_req, res) => json(res, 200, { models: [{ name: 'acme/tiny' }] }), before.port)
  await until('healthy again', () => probe.state.healthy)
  t.same(probe.state, { healthy: true, models: ['acme/tiny'], error: null, checkedAt: probe.state.checkedAt })
  t.equal(changes, 1, 'told once: it came up with its model')
  await until('probed again while healthy', () => up.received.length >= 2)
  t.equal(changes, 1, 'the same models again: nothing to tell')

  t.same(log.lines.map((l) => [l.level, l.msg.replace(/:.*/, '')]), [['warn', 'upstream gpu-box is down'], ['info', 'upstream gpu-box is up, serving 1 model(s)']],
    'once per outage, not once per retry')
  t.match(log.lines[0]!.obj, { upstream: 'gpu-box', error: /ECONNREFUSED/ })
})

t.test('while failing, probes back off 1 s, then 2 s', async (t) => {
  const times: number[] = []
  const fake = await fakeUpstream(t, (_req, res) => { times.push(Date.now()); json(res, 503, { error: 'loading' }) })
  const probe = new UpstreamProbe(upstream({ name: 'slow', url: fake.origin, kind: 'openai' }), { maxBackoffMs: 5000 })
  t.teardown(() => probe.stop())
  probe.start()
  await until('three probes', () => times.length >= 3, 10_000)
  t.match(probe.state, { healthy: false, models: [], error: /^upstream "slow" \(GET .*\/v1\/models\) answered 503: loading$/ })
  t.ok(times[1]! - times[0]! >= 1000 - 5, `1 s before the second probe (${times[1]! - times[0]!} ms)`)
  t.ok(times[2]! - times[1]! >= 2000 - 5, `2 s before the third (${times[2]! - times[1]!} ms)`)
})

t.test('probeNow after a failed request: a refused key is seen at once, named without the key; a new model list is told', async (t) => {
  let answer: 'ok' | 'more' | 'refuse' = 'ok'
  const fake = await fakeUpstream(t, (req, res) => {
    if (answer === 'refuse') { json(res, 401, { error: `bad key ${req.authorization}` }); return }
    json(res, 200, { object: 'list', data: answer === 'ok' ? [{ id: 'a' }] : [{ id: 'a' }, { id: 'b' }] })
  })
  // Probes every minute: only probeNow() probes during the test.
  const probe = new UpstreamProbe(upstream({ name: 'vllm', url: fake.origin, kind: 'openai', key: KEY }), { intervalMs: 60_000 })
  t.teardown(() => probe.stop())
  let changes = 0
  probe.onChange(() => { changes++ })
  probe.start()
  await until('healthy', () => probe.state.healthy)
  t.same(probe.state.models, ['a'])

  answer = 'more'
  await probe.probeNow()
  t.same(probe.state.models, ['a', 'b'])
  t.equal(changes, 2, 'up, then the new model')

  answer = 'refuse'
  const [x, y] = [probe.probeNow(), probe.probeNow()]
  t.equal(x, y, 'asked twice at once: one probe')
  await x
  t.match(probe.state, { healthy: false, models: [], error: /^upstream "vllm" \(GET .*\/v1\/models\) answered 401: bad key Bearer <redacted>$/ })
  t.notMatch(probe.state.error, KEY)
  t.equal(changes, 3)
  t.equal(fake.received.length, 3)
})

t.test('stop(): a probe under way changes nothing, and no more are made', async (t) => {
  const fake = await fakeUpstream(t, () => { /* answers nothing */ })
  const probe = new UpstreamProbe(upstream({ url: fake.origin, kind: 'ollama' }), { intervalMs: 10, maxBackoffMs: 10 })
  probe.start()
  await until('the probe reached the upstream', () => fake.received.length === 1)
  probe.stop()
  await fake.close()
  t.equal(probe.state.checkedAt, 0, 'the probe cut off by the stop recorded nothing')
  // A probe after the stop still works (nothing is scheduled after it): it sees the upstream gone.
  await probe.probeNow()
  t.match(probe.state, { healthy: false, error: /cannot be reached/ })
  t.equal(fake.received.length, 1)
})
