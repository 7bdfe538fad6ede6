import t from 'tap'
import { serveTinyModels } from '../../helpers/inference.js'
import { until } from '../../helpers/until.js'

// Preloading in the gateway's own process (test/core/drain.case.ts covers it through `llamagate serve`): a preload
// whose model is not there yet fails, says so in /readyz, and is tried again until it loads.

t.test('a preload that fails is retried: /readyz names it until the model is loaded, then is ready', async (t) => {
  // serveTinyModels imports the model after the app is ready, so the first try finds no model.
  const { app, url } = await serveTinyModels(t, ['acme/tiny'], { models: { 'acme/tiny': { preload: true, keep_alive: '2m' } } })
  const first = await (await fetch(`${url}/readyz`)).json() as { status: string, reasons: string[] }
  t.equal(first.status, 'not ready')
  t.match(first.reasons, [/^preloading acme\/tiny/], `said: ${first.reasons.join('; ')}`)
  const failed = await until('the first try failed', async () => {
    const body = await (await fetch(`${url}/readyz`)).json() as { reasons: string[] }
    return body.reasons.find((r) => /failed 1 time\(s\), trying again shortly: model "acme\/tiny" not found/.test(r))
  }, 10_000)
  t.ok(failed, failed)
  await until('ready after the retry', async () => (await fetch(`${url}/readyz`)).status === 200, 30_000)
  const loaded = app.scheduler.snapshot()
  t.equal(loaded.length, 1)
  t.equal(loaded[0]!.model.name, 'acme/tiny', 'loaded by the preload')
  const left = loaded[0]!.expiresAt! - Date.now()
  t.ok(left > 60_000 && left <= 120_000, `with its keep_alive of 2 minutes: ${Math.round(left / 1000)} s left`)
  t.same(await app.lifecycle.notReady(), [], 'nothing keeps it from being ready')
})

t.test('with API keys on, /readyz without a key says what kind of thing is wrong, not which model or why', async (t) => {
  const KEY = 'sk-readyz-details-0123456789'
  const { url } = await serveTinyModels(t, ['acme/tiny'], { auth: { api_keys: [KEY] }, models: { 'acme/secret-model': { preload: true } } })
  const anonymous = await fetch(`${url}/readyz`)
  t.equal(anonymous.status, 503, 'still a probe: public, and not ready')
  const told = await anonymous.json() as { reasons: string[] }
  t.same(told.reasons, ['models named for preloading are not loaded yet (details with an API key)'])
  t.notMatch(JSON.stringify(told), /secret-model/, 'no model name')
  const withKey = await (await fetch(`${url}/readyz`, { headers: { authorization: `Bearer ${KEY}` } })).json() as { reasons: string[] }
  t.match(withKey.reasons, [/^preloading acme\/secret-model/], 'the details, to a key holder')
})
