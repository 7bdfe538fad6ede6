// Remote images, an attack through the gateway's own fetches: with vision.allow_remote_images on, 60 image URLs of 15 MiB each were all
// fetched at once (RSS 193 MB -> 1.77 GB), loopback and private addresses were fetched, also after a redirect, and
// the error words told a closed port from an open one.
import { createServer, type Server } from 'node:http'
import t from 'tap'
import { isPrivateAddress } from '../../../core/base/private-address.js'
import { post, serveRealisticModels } from '../../helpers/inference.js'
import { usualMs, withinUsualTime } from '../../helpers/usual-time.js'

const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64')

/** A loopback HTTP server: /cat.png, /to-loopback (a redirect to itself), counting what it was asked. */
async function imageHost (t: { teardown: (fn: () => void) => void }): Promise<{ url: string, requests: string[] }> {
  const requests: string[] = []
  const server: Server = createServer((req, res) => {
    requests.push(req.url ?? '')
    if (req.url === '/cat.png') { res.writeHead(200, { 'content-type': 'image/png' }); res.end(PNG); return }
    if (req.url === '/to-loopback') { res.writeHead(302, { location: `http://127.0.0.1:${(server.address() as { port: number }).port}/cat.png` }); res.end(); return }
    res.writeHead(404); res.end()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => server.close())
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, requests }
}

function chat (urls: string[]): Record<string, unknown> {
  return { model: 'acme/vision', max_tokens: 1, messages: [{ role: 'user', content: [...urls.map((url) => ({ type: 'image_url', image_url: { url } })), { type: 'text', text: 'hi' }] }] }
}

t.test('private, loopback and metadata addresses are never fetched; all failures read the same', async (t) => {
  const host = await imageHost(t)
  const { url } = await serveRealisticModels(t, { 'acme/vision': { kind: 'qwen25', projector: true } }, { vision: { allow_remote_images: true } })
  const closedPort = 'http://127.0.0.1:9/cat.png'
  const cases = [`${host.url}/cat.png`, closedPort, 'http://169.254.169.254/latest/meta-data/', 'http://[::1]/cat.png', 'http://localhost:1/x.png', 'http://10.1.2.3/x.png']
  const answers: string[] = []
  for (const target of cases) {
    const res = await post(`${url}/v1/chat/completions`, chat([target]))
    t.equal(res.status, 400, `${target}: 400`)
    const { error } = await res.json() as { error: { message: string, code: string } }
    t.equal(error.code, 'image_fetch_failed')
    answers.push(error.message.replace(target, '<url>'))
  }
  t.same(new Set(answers), new Set(['could not fetch image 0 (<url>): it could not be reached']), 'one sentence for an open port, a closed one, metadata, v6 loopback, a name for loopback')
  t.same(host.requests, [], 'the loopback host was never asked')
})

t.test('with private hosts allowed: redirects followed, and no more image URLs than the limit fetched', async (t) => {
  const host = await imageHost(t)
  const isPrivate = isPrivateAddress
  t.ok(isPrivate('127.0.0.1') && isPrivate('::ffff:10.0.0.1') && isPrivate('fd00::1') && isPrivate('169.254.169.254') && !isPrivate('93.184.216.34') && !isPrivate('2606:4700::1'), 'the address classes')
  const allowing = await serveRealisticModels(t, { 'acme/vision': { kind: 'qwen25', projector: true } }, { vision: { allow_remote_images: true, allow_private_image_hosts: true, max_remote_images: 2 } })
  const fetched = await post(`${allowing.url}/v1/chat/completions`, chat([`${host.url}/to-loopback`]))
  t.equal(fetched.status, 200, 'followed, when allowed')
  t.same(host.requests, ['/to-loopback', '/cat.png'])

  const normalChat = (): Promise<Response> => post(`${allowing.url}/v1/chat/completions`, { model: 'acme/vision', max_tokens: 1, messages: [{ role: 'user', content: 'hi' }] })
  const usual = await usualMs(async () => (await normalChat()).text())
  const started = performance.now()
  const [tooMany, during] = await Promise.all([
    post(`${allowing.url}/v1/chat/completions`, chat(Array.from({ length: 60 }, (_, i) => `${host.url}/cat.png?${i}`))),
    normalChat().then(async (res) => ({ status: res.status, ms: performance.now() - started })),
  ])
  t.equal(during.status, 200, 'a normal request sent with it is answered')
  withinUsualTime(t, 'the normal request', during.ms, usual)
  t.equal(tooMany.status, 400, '60 image URLs: 400')
  t.match(await tooMany.json(), { error: { code: 'too_many_images', message: /^this request has 60 image URLs: at most 2 are fetched for one request \(vision\.max_remote_images\)/ } })
  t.same(host.requests, ['/to-loopback', '/cat.png'], 'and none of the 60 was fetched')
  const normal = await post(`${allowing.url}/v1/chat/completions`, { model: 'acme/vision', max_tokens: 1, messages: [{ role: 'user', content: 'hi' }] })
  t.equal(normal.status, 200, 'another client is answered')
})
