import Fastify from 'fastify'
import { join } from 'node:path'
import t from 'tap'
import { CONTENT_SECURITY_POLICY, PAGE_DIR, webUiRoutes } from '../../../plugins/web-ui/page-routes.js'
import { PageFiles } from '../../../plugins/web-ui/page-files.js'
import { build, tempDir } from '../../helpers/app.js'

// The page is built by `npm run build` (npm test's pretest) into dist/web-ui; these tests read what it wrote.

/** The names index.html loads: its script and its style sheet. */
function assetsOf (html: string): { script: string, style: string } {
  const script = /<script type="module" src="([^"]+)"><\/script>/.exec(html)?.[1]
  const style = /<link rel="stylesheet" href="([^"]+)">/.exec(html)?.[1]
  if (!script || !style) throw new Error(`index.html names no script or style sheet: ${html}`)
  return { script, style }
}

t.test('/ui/ answers the page with a strict CSP, its type and revalidation; 304 on a matching ETag', async (t) => {
  const app = await build(t)
  const res = await app.inject({ method: 'GET', url: '/ui/' })
  t.equal(res.statusCode, 200)
  t.equal(res.headers['content-type'], 'text/html; charset=utf-8')
  t.equal(res.headers['content-security-policy'], CONTENT_SECURITY_POLICY)
  const policy = new Map(CONTENT_SECURITY_POLICY.split('; ').map((d) => [d.split(' ')[0], d.slice(d.indexOf(' ') + 1)]))
  t.equal(policy.get('default-src'), "'self'")
  t.equal(policy.get('script-src'), "'self'", 'no inline script, no eval')
  t.equal(policy.get('style-src'), "'self'", 'no inline style')
  t.equal(policy.get('connect-src'), "'self'", 'fetches go to this server only')
  t.equal(policy.get('img-src'), "'self' data: blob:")
  t.equal(policy.get('frame-ancestors'), "'none'")
  t.equal(res.headers['x-content-type-options'], 'nosniff')
  t.equal(res.headers['referrer-policy'], 'no-referrer')
  t.equal(res.headers['cache-control'], 'no-cache')
  t.match(res.headers.etag, /^"[\w-]+"$/)
  t.notMatch(res.body, /<script(?![^>]*\ssrc=)[^>]*>/, 'no inline script in index.html')
  t.notMatch(res.body, /\sstyle=/, 'no inline style attribute in index.html')
  t.notMatch(res.body, /https?:\/\//, 'nothing loaded from elsewhere')

  const again = await app.inject({ method: 'GET', url: '/ui/', headers: { 'if-none-match': res.headers.etag as string } })
  t.equal(again.statusCode, 304)
  t.equal(again.body, '')
})

t.test('the bundles: JavaScript and CSS types, cached for good (their names carry a hash); source maps revalidated', async (t) => {
  const app = await build(t)
  const { script, style } = assetsOf((await app.inject({ method: 'GET', url: '/ui/' })).body)
  t.match(script, /^app-[A-Z0-9]{8}\.js$/)
  const js = await app.inject({ method: 'GET', url: `/ui/${script}` })
  t.equal(js.statusCode, 200)
  t.equal(js.headers['content-type'], 'text/javascript; charset=utf-8')
  t.equal(js.headers['cache-control'], 'public, max-age=31536000, immutable')
  t.equal(js.headers['content-security-policy'], CONTENT_SECURITY_POLICY)
  const css = await app.inject({ method: 'GET', url: `/ui/${style}` })
  t.equal(css.statusCode, 200)
  t.equal(css.headers['content-type'], 'text/css; charset=utf-8')
  t.equal(css.headers['cache-control'], 'public, max-age=31536000, immutable')
  t.notMatch(css.body, /@import|url\(\s*['"]?https?:/, 'no style sheet or font from elsewhere')
  const map = await app.inject({ method: 'GET', url: `/ui/${script}.map` })
  t.equal(map.statusCode, 200)
  t.equal(map.headers['content-type'], 'application/json; charset=utf-8')
  t.equal(map.headers['cache-control'], 'no-cache')
  t.equal(map.json().version, 3)
})

t.test('/ui redirects to /ui/; unknown files are a JSON 404 that still carries the policy', async (t) => {
  const app = await build(t)
  const bare = await app.inject({ method: 'GET', url: '/ui' })
  t.equal(bare.statusCode, 301)
  t.equal(bare.headers.location, '/ui/')
  for (const url of ['/ui/nope.js', '/ui/index.htm', '/ui/..%2Fpackage.json', '/ui/%2e%2e%2fconfig.yaml']) {
    const res = await app.inject({ method: 'GET', url })
    t.equal(res.statusCode, 404, url)
    t.match(res.json(), { error: /no such file of the web page/ }, url)
    t.equal(res.headers['content-security-policy'], CONTENT_SECURITY_POLICY, `${url}: policy on the 404`)
  }
  t.equal((await app.inject({ method: 'GET', url: '/ui/x/y.js' })).statusCode, 404, 'no folders under /ui/')
  t.equal((await app.inject({ method: 'POST', url: '/ui/', payload: {} })).statusCode, 405, 'the page is read-only')
})

t.test('GET / sends browsers (Accept: text/html) to /ui/; other clients keep the heartbeat text', async (t) => {
  const app = await build(t)
  const browser = 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8'
  for (const method of ['GET', 'HEAD'] as const) {
    const res = await app.inject({ method, url: '/', headers: { accept: browser } })
    t.equal(res.statusCode, 302, `${method} from a browser`)
    t.equal(res.headers.location, '/ui/')
  }
  for (const accept of [undefined, '*/*', 'application/json', 'text/plain']) {
    const res = await app.inject({ method: 'GET', url: '/', headers: accept === undefined ? {} : { accept } })
    t.equal(res.statusCode, 200, `Accept: ${accept}`)
    t.equal(res.body, 'llamagate is running')
    t.match(res.headers['content-type'], /^text\/plain/)
  }
})

t.test('the Host and Origin guards apply to the page unchanged', async (t) => {
  const app = await build(t)
  const foreignHost = await app.inject({ method: 'GET', url: '/ui/', headers: { host: 'attacker.example:11435' } })
  t.equal(foreignHost.statusCode, 403, 'a foreign Host (DNS rebinding) is refused')
  t.match(foreignHost.json(), { error: /host "attacker\.example" is not allowed/ })
  t.equal((await app.inject({ method: 'GET', url: '/ui/', headers: { host: '127.0.0.1:11435' } })).statusCode, 200)
  t.equal((await app.inject({ method: 'GET', url: '/ui/', headers: { host: 'localhost:11435' } })).statusCode, 200)
  const foreignOrigin = await app.inject({ method: 'GET', url: '/ui/', headers: { origin: 'https://attacker.example' } })
  t.equal(foreignOrigin.statusCode, 403, 'a foreign Origin is refused')
  t.equal((await app.inject({ method: 'GET', url: '/', headers: { host: 'attacker.example', accept: 'text/html' } })).statusCode, 403, 'nor does / redirect for a foreign Host')
})

t.test('with API keys on, the page loads without a key; the API still wants one', async (t) => {
  const app = await build(t, { auth: { api_keys: ['sekret'] } })
  const page = await app.inject({ method: 'GET', url: '/ui/' })
  t.equal(page.statusCode, 200, 'the page itself')
  const { script, style } = assetsOf(page.body)
  t.equal((await app.inject({ method: 'GET', url: `/ui/${script}` })).statusCode, 200, 'its script')
  t.equal((await app.inject({ method: 'GET', url: `/ui/${style}` })).statusCode, 200, 'its style sheet')
  t.equal((await app.inject({ method: 'GET', url: '/ui' })).statusCode, 301)
  t.equal((await app.inject({ method: 'GET', url: '/ui/nope.js' })).statusCode, 404, 'an unknown file: 404, not 401')
  for (const url of ['/api/tags', '/api/ps', '/ui/../api/tags', '/ui/%2e%2e/api/tags', '/v1/models']) {
    t.equal((await app.inject({ method: 'GET', url })).statusCode, 401, `${url} without a key`)
  }
  t.equal((await app.inject({ method: 'POST', url: '/api/show', payload: { model: 'a/b' } })).statusCode, 401)
  t.equal((await app.inject({ method: 'GET', url: '/api/tags', headers: { authorization: 'Bearer sekret' } })).statusCode, 200)
})

t.test('an unbuilt checkout: /ui/ says to build the page', async (t) => {
  const empty = await PageFiles.load(join(await tempDir(t), 'missing'))
  t.equal(empty.built, false)
  t.equal(empty.get('index.html'), null)
  t.equal((await PageFiles.load(PAGE_DIR)).built, true, 'the built page is there (npm run build)')

  const app = Fastify()
  t.teardown(() => app.close())
  await app.register(webUiRoutes, { dir: join(await tempDir(t), 'missing') })
  const res = await app.inject({ method: 'GET', url: '/ui/' })
  t.equal(res.statusCode, 404)
  t.match(res.json(), { message: /not built here: run "npm run build"/ })
  t.equal(res.headers['content-security-policy'], CONTENT_SECURITY_POLICY)
})

t.test('files of other types in the folder are not served', async (t) => {
  const dir = await tempDir(t)
  const { writeFile } = await import('node:fs/promises')
  await writeFile(join(dir, 'index.html'), '<!doctype html>')
  await writeFile(join(dir, 'secret.env'), 'TOKEN=1')
  await writeFile(join(dir, 'app-ABCDEFGH.js'), 'export {}')
  const files = await PageFiles.load(dir)
  t.equal(files.get('secret.env'), null, 'an unknown extension is left out')
  t.equal(files.get('app-ABCDEFGH.js')?.immutable, true, 'a hashed name is kept for good')
  t.equal(files.get('index.html')?.immutable, false)
})
