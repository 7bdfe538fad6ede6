// Hub redirects to private addresses (redirects to loopback were once followed): a hub, a compromised
// mirror or anything on the way could make a pull fetch from the gateway's loopback, its LAN or the cloud metadata
// service. The fake hub's CDN listens on 127.0.0.1 like the hub, so its usual redirects stay on the hub's own host.
import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { build } from '../../helpers/app.js'
import { FakeHub } from '../../helpers/fake-hub.js'
import { openPullStream } from '../../helpers/pull-stream.js'
import { tinyGgufBytes } from '../../helpers/tiny-gguf.js'
import { until } from '../../helpers/until.js'

async function hub (t: Test): Promise<FakeHub> {
  const fake = await FakeHub.start()
  t.teardown(() => fake.close())
  fake.addRepo('acme/tiny-GGUF', { private: true, files: [{ path: 'README.md', content: Buffer.from('# tiny'), lfs: false }, { path: 'tiny-Q4_K_M.gguf', content: await tinyGgufBytes(t, 1) }] })
  fake.addRepo('acme/small-GGUF', { files: [{ path: 'small-Q4_K_M.gguf', content: await tinyGgufBytes(t, 2) }] })
  fake.tokens.add('hf_secret')
  return fake
}

async function serve (t: Test, fake: FakeHub, hubValues: Record<string, unknown> = {}) {
  const app = await build(t, { hub: { endpoint: fake.url, token: 'hf_secret', ...hubValues } })
  const retries: string[] = []
  app.puller.events.on('retry', (reason) => retries.push(String(reason)))
  return { app, url: await app.listen({ host: '127.0.0.1', port: 0 }), retries }
}

const REFUSAL = /^the hub redirected tiny-Q4_K_M\.gguf to localhost:\d+ \((127\.0\.0\.1|::1)\), a private address, and it was not followed; set hub\.allow_private_redirects: true if your mirror serves from your network$/

t.test('a redirect to loopback under another name is refused: a clear error, nothing asked of it, nothing kept', async (t) => {
  const fake = await hub(t)
  fake.faults = { cdnHost: 'localhost' }
  const { app, url, retries } = await serve(t, fake)
  const stream = await openPullStream(url, 'acme/tiny-GGUF')
  const events = await stream.done
  t.equal(stream.status, 200)
  t.same(events[0], { status: 'pulling acme/tiny-GGUF' })
  t.match(events.at(-1), { error: REFUSAL }, 'the stream ends with an error event that says what to do')
  t.notOk(events.some((e) => e.status === 'success'))
  t.same(retries, [], 'a refusal is not retried')
  t.same(fake.cdnRequests, [], 'the CDN was never asked, so neither a byte nor the token went there')
  t.ok(fake.hubAuthorizations.length > 0 && fake.hubAuthorizations.every((a) => a === 'Bearer hf_secret'), 'the hub itself had the token')
  t.equal(app.store.find('acme/tiny-GGUF'), null, 'nothing listed')
  t.same(await readdir(join(app.config.modelsDir, 'acme', 'tiny-GGUF')), [], 'no .partial, no sidecar')
  const tags = await (await fetch(`${url}/api/tags`)).json() as { models: unknown[] }
  t.same(tags.models, [])

  const whole = await fetch(`${url}/api/pull`, { method: 'POST', body: JSON.stringify({ model: 'acme/tiny-GGUF', stream: false }) })
  t.equal(whole.status, 502, 'non-streamed: a 502')
  t.match(await whole.json(), { error: REFUSAL }, 'in the native error shape')

  // An address literal asks no DNS: it is refused on the URL, before any connection.
  fake.faults = { cdnHost: '169.254.169.254' }
  const metadata = await (await openPullStream(url, 'acme/tiny-GGUF')).done
  t.match(metadata.at(-1), { error: /^the hub redirected tiny-Q4_K_M\.gguf to 169\.254\.169\.254:\d+, a private address, and it was not followed; set hub\.allow_private_redirects: true/ })
  t.same(retries, [], 'not retried either')
  t.same(await readdir(join(app.config.modelsDir, 'acme', 'tiny-GGUF')), [])
})

t.test('with hub.allow_private_redirects on, the same redirect is followed', async (t) => {
  const fake = await hub(t)
  fake.faults = { cdnHost: 'localhost', rejectAuthOnCdn: true }
  const { app, url } = await serve(t, fake, { allow_private_redirects: true })
  const events = await (await openPullStream(url, 'acme/tiny-GGUF')).done
  t.same(events.at(-1), { status: 'success' })
  t.ok(fake.cdnRequests.length > 0, 'the file came from the CDN named localhost')
  t.same(fake.cdnAuthorizations, [], 'still without the token: it goes to the hub\'s origin only')
  t.equal(app.store.get('acme/tiny-GGUF').manifest.primary, 'tiny-Q4_K_M.gguf')
})

t.test('a CDN on the hub\'s own host is followed; another client\'s pull goes on beside a refused one', async (t) => {
  const fake = await hub(t)
  const size = fake.repos.get('acme/small-GGUF')!.files[0]!.content.length
  // Slow enough that the refused pull below happens while this one downloads.
  fake.faults = { bytesPerSecond: Math.ceil(size / 2) }
  const { app, url } = await serve(t, fake)
  const first = await openPullStream(url, 'acme/small-GGUF')
  await until('the first pull to receive bytes from the same-host CDN', () => [...fake.cdnBytes.values()].some((n) => n > 0))
  fake.faults = { ...fake.faults, cdnHost: 'localhost' }
  const refused = await (await openPullStream(url, 'acme/tiny-GGUF')).done
  t.match(refused.at(-1), { error: REFUSAL })
  t.ok(app.puller.isPulling('acme/small-GGUF'), 'the first pull was still under way when the other was refused')
  t.same((await first.done).at(-1), { status: 'success' }, 'and it finished')
  t.equal(app.store.get('acme/small-GGUF').manifest.primary, 'small-Q4_K_M.gguf')
  t.equal(app.store.find('acme/tiny-GGUF'), null)
  t.same(fake.cdnRequests.length, 1, 'only the first pull reached the CDN')
})
