import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import t, { type Test } from 'tap'
import { HubClient } from '../../../plugins/download/hub-client.js'
import { HubError, hubErrorFrom } from '../../../plugins/download/hub-error.js'
import { PrivateRedirectError } from '../../../plugins/download/hub-redirects.js'
import { retryDelayMs } from '../../../plugins/download/retry.js'
import { FakeHub, gitOid, sha256 } from '../../helpers/fake-hub.js'

const weights = Buffer.alloc(50_000, 9)
const config = Buffer.from('{"architectures":["LlamaForCausalLM"]}')

async function hub (t: Test): Promise<FakeHub> {
  const fake = await FakeHub.start()
  t.teardown(() => fake.close())
  fake.addRepo('acme/st', { files: [
    { path: 'config.json', content: config, lfs: false },
    { path: 'model.safetensors', content: weights },
    { path: 'sub/tokenizer.json', content: Buffer.from('{}'), lfs: false },
  ] })
  fake.addRepo('acme/secret', { private: true, files: [{ path: 'config.json', content: config, lfs: false }, { path: 's-Q4_K_M.gguf', content: weights }] })
  fake.tokens.add('hf_good')
  return fake
}

async function body (answer: { body: AsyncIterable<Buffer> }): Promise<Buffer> {
  const chunks: Buffer[] = []
  for await (const chunk of answer.body) chunks.push(chunk)
  return Buffer.concat(chunks)
}

t.test('the commit, then the whole tree page by page, with SHA-256 for LFS files and git ids for the rest', async (t) => {
  const fake = await hub(t)
  fake.faults = { pageSize: 1 }
  const client = new HubClient({ endpoint: `${fake.url}/`, token: null })
  const commit = await client.resolveCommit('acme/st')
  t.equal(commit, fake.repos.get('acme/st')!.commit)
  const files = await client.listFiles('acme/st', commit)
  t.same(files, [
    { path: 'config.json', size: config.length, sha256: null, gitOid: gitOid(config) },
    { path: 'model.safetensors', size: weights.length, sha256: sha256(weights), gitOid: null },
    { path: 'sub/tokenizer.json', size: 2, sha256: null, gitOid: gitOid(Buffer.from('{}')) },
  ])
  t.equal(fake.hubRequests.filter((r) => r.includes('/tree/')).length, 3, 'three pages of one entry')
  t.ok(fake.hubRequests.every((r) => !r.includes('//api')), 'a trailing slash on the endpoint is dropped')
})

t.test('5xx answers are retried after Retry-After; a bad token is said to be one', async (t) => {
  const fake = await hub(t)
  fake.faults = { serverErrors: 2 }
  const client = new HubClient({ endpoint: fake.url, token: null })
  const started = Date.now()
  t.equal(await client.resolveCommit('acme/st'), fake.repos.get('acme/st')!.commit)
  t.equal(fake.hubRequests.length, 3, 'two 503s, then the answer')
  t.ok(Date.now() - started >= 1900, 'Retry-After: 0 waited 1 s each time, as huggingface_hub does')
  const bad = new HubClient({ endpoint: fake.url, token: 'hf_wrong' })
  const err = await bad.resolveCommit('acme/st').catch((e: unknown) => e)
  t.ok(err instanceof HubError)
  t.match(err, { statusCode: 401, message: /the hub refused HF_TOKEN: Invalid credentials in Authorization header/ })
})

t.test('the token goes to the hub, through its own relative redirects, and never to the CDN', async (t) => {
  const fake = await hub(t)
  fake.faults = { rejectAuthOnCdn: true, resolveCache: true }
  fake.renames.set('acme/old-secret', 'acme/secret')
  const client = new HubClient({ endpoint: fake.url, token: 'hf_good' })
  // A renamed private repository: the hub's 307 stays on its origin, so the token must follow it.
  const commit = await client.resolveCommit('acme/old-secret')
  const files = await client.listFiles('acme/old-secret', commit)
  t.same(files.map((f) => f.path), ['config.json', 's-Q4_K_M.gguf'])
  const small = await client.openFile('acme/old-secret', commit, 'config.json', 0)
  t.equal(small.status, 200)
  t.same(await body(small), config, 'a small file through two same-origin redirects (rename, resolve cache)')
  const big = await client.openFile('acme/old-secret', commit, 's-Q4_K_M.gguf', 10)
  t.equal(big.status, 206, 'the range reached the CDN')
  t.same(await body(big), weights.subarray(10))
  t.same(fake.cdnAuthorizations, [], 'the CDN never saw an Authorization header')
  t.ok(fake.hubAuthorizations.length >= 6 && fake.hubAuthorizations.every((a) => a === 'Bearer hf_good'), 'every hub request carried the token')
  t.ok(fake.hubRequests.some((r) => r.startsWith('/acme/secret/resolve/')), 'the resolve was followed to the new name')
})

t.test('a missing file, and a missing repository with and without a token', async (t) => {
  const fake = await hub(t)
  const client = new HubClient({ endpoint: fake.url, token: null })
  const commit = await client.resolveCommit('acme/st')
  await t.rejects(client.openFile('acme/st', commit, 'nope.gguf', 0), { statusCode: 404, message: /^nope\.gguf was not found in acme\/st on http:\/\/127\.0\.0\.1:\d+; the repository changed, pull again$/ })
  await t.rejects(client.resolveCommit('acme/missing'), { statusCode: 404, message: /repository acme\/missing was not found on http:\/\/127\.0\.0\.1:\d+ \(if it is private, set HF_TOKEN\)/ })
  const withToken = new HubClient({ endpoint: fake.url, token: 'hf_good' })
  await t.rejects(withToken.resolveCommit('acme/missing'), { statusCode: 404, message: /^repository acme\/missing was not found on http:\/\/127\.0\.0\.1:\d+$/ })
})

t.test('how long a retry waits: RateLimit reset, Retry-After, else 1, 2, 4, 8, 8 s', async (t) => {
  const headers = (h: Record<string, string>) => ({ get: (name: string) => h[name] ?? null })
  t.equal(retryDelayMs(1, headers({ ratelimit: '"resolvers";r=0;t=55' })), 56_000)
  t.equal(retryDelayMs(1, headers({ ratelimit: '"api";r=3;t=55' })), 1000, 'requests remain: plain backoff')
  t.equal(retryDelayMs(2, headers({ 'retry-after': '3' })), 4000)
  t.equal(retryDelayMs(2, headers({ 'retry-after': 'Wed, 21 Oct 2015 07:28:00 GMT' })), 2000, 'an HTTP date is ignored')
  t.same([1, 2, 3, 4, 5, 6].map((n) => retryDelayMs(n)), [1000, 2000, 4000, 8000, 8000, 8000])
})

t.test('hub errors say what to do', async (t) => {
  const answer = (status: number, h: Record<string, string>, text = '') => ({ status, headers: { get: (n: string) => h[n] ?? null }, text: async () => text })
  const gated = await hubErrorFrom(answer(401, { 'x-error-code': 'GatedRepo' }), 'g/m', 'https://huggingface.co', false)
  t.match(gated, { statusCode: 403, message: 'g/m is a gated repository: accept its licence at https://huggingface.co/g/m and set HF_TOKEN' })
  const notApproved = await hubErrorFrom(answer(403, { 'x-error-code': 'GatedRepo' }), 'g/m', 'https://huggingface.co', true)
  t.match(notApproved.message, /accept its licence at https:\/\/huggingface\.co\/g\/m with the account of your HF_TOKEN/)
  const down = await hubErrorFrom(answer(500, { 'x-request-id': 'abc' }, '{"error":"boom"}'), 'g/m', 'https://huggingface.co', false)
  t.match(down, { statusCode: 502, message: 'the hub answered 500 for g/m: boom', requestId: 'abc' })
  const limited = await hubErrorFrom(answer(429, {}), 'g/m', 'https://huggingface.co', false)
  t.match(limited, { statusCode: 503, message: /rate limit.*setting HF_TOKEN raises the limit/ })
})

t.test('a gated repository without a token is refused at its model info, before any listing', async (t) => {
  const fake = await hub(t)
  fake.addRepo('acme/gated', { gated: true, files: [{ path: 'g-Q4_K_M.gguf', content: weights }] })
  const client = new HubClient({ endpoint: fake.url, token: null })
  await t.rejects(client.resolveCommit('acme/gated'), { statusCode: 403, message: `acme/gated is a gated repository: accept its licence at ${fake.url}/acme/gated and set HF_TOKEN` })
  t.notOk(fake.hubRequests.some((r) => r.includes('/tree/')), 'no tree request was made')
  // With a token the hub decides, at the files: this token's account has not accepted the licence.
  fake.tokens.add('hf_unapproved')
  fake.repos.get('acme/gated')!.approved = ['hf_good']
  const unapproved = new HubClient({ endpoint: fake.url, token: 'hf_unapproved' })
  const commit = await unapproved.resolveCommit('acme/gated')
  await t.rejects(unapproved.listFiles('acme/gated', commit), { statusCode: 403, message: `acme/gated is a gated repository: accept its licence at ${fake.url}/acme/gated with the account of your HF_TOKEN` })
  const approved = new HubClient({ endpoint: fake.url, token: 'hf_good' })
  t.same((await approved.listFiles('acme/gated', commit)).map((f) => f.path), ['g-Q4_K_M.gguf'])
})

t.test('the listing goes through the given fetch: the token only to the hub\'s origin, network errors retried', async (t) => {
  const commit = 'c'.repeat(40)
  const seen: Array<{ url: string, authorization: string | null }> = []
  let failures = 1
  const fetchStub: typeof fetch = async (input, init) => {
    const url = String(input)
    seen.push({ url, authorization: new Headers(init?.headers).get('authorization') })
    if (failures-- > 0) throw new TypeError('fetch failed')
    const json = (body: unknown, headers: Record<string, string> = {}) => new Response(JSON.stringify(body), { headers: { 'content-type': 'application/json', ...headers } })
    if (url.includes('/revision/')) return json({ _id: 'x', id: 'acme/m', sha: commit, gated: false, private: false })
    // A mirror whose next page lives on another host: that host must not get the token.
    if (url.startsWith('https://hub.example/')) return json([{ type: 'file', path: 'a-Q4_K_M.gguf', size: 3, oid: 'o', lfs: { oid: 'f'.repeat(64), size: 3, pointerSize: 134 } }], { link: '<https://pages.example/api/models/acme/m/tree/x?cursor=1>; rel="next"' })
    return json([{ type: 'directory', path: 'sub', size: 0, oid: 'd' }, { type: 'file', path: 'sub/b.json', size: 2, oid: 'g' }])
  }
  const client = new HubClient({ endpoint: 'https://hub.example', token: 'hf_secret', fetch: fetchStub })
  const started = Date.now()
  t.equal(await client.resolveCommit('acme/m'), commit)
  t.ok(Date.now() - started >= 900, 'a network error waited 1 s before the next try')
  t.same(await client.listFiles('acme/m', commit), [
    { path: 'a-Q4_K_M.gguf', size: 3, sha256: 'f'.repeat(64), gitOid: null },
    { path: 'sub/b.json', size: 2, sha256: null, gitOid: 'g' },
  ], 'directories are left out; both pages read')
  t.match(seen[2]!.url, /^https:\/\/hub\.example\/api\/models\/acme\/m\/tree\/c{40}\?recursive=true/)
  t.same(seen.map((s) => s.authorization), ['Bearer hf_secret', 'Bearer hf_secret', 'Bearer hf_secret', null])
})

t.test('the API\'s redirects: followed on the hub\'s own host, refused to another host\'s private address unless allowed', async (t) => {
  const commit = 'e'.repeat(40)
  const seen: string[] = []
  let elsewhere = ''
  // A hub whose model info moved: to itself, to itself under another name, to the metadata address.
  const server = createServer((req, res) => {
    const path = new URL(req.url!, 'http://hub').pathname
    seen.push(`${req.headers.host} ${path} ${req.headers.authorization ?? '-'}`)
    if (path !== '/moved') {
      res.writeHead(307, { location: elsewhere })
      res.end()
      return
    }
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(JSON.stringify({ _id: 'x', id: 'acme/m', sha: commit, gated: false, private: false }))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise((resolve) => server.close(resolve)))
  const port = (server.address() as AddressInfo).port
  const endpoint = `http://127.0.0.1:${port}`

  elsewhere = `${endpoint}/moved`
  t.equal(await new HubClient({ endpoint, token: 'hf_x' }).resolveCommit('acme/m'), commit, 'the hub\'s own host: followed')
  t.same(seen.splice(0), [`127.0.0.1:${port} /api/models/acme/m/revision/HEAD Bearer hf_x`, `127.0.0.1:${port} /moved Bearer hf_x`], 'with the token on each hop')

  elsewhere = `http://localhost:${port}/moved`
  const err = await new HubClient({ endpoint, token: 'hf_x' }).resolveCommit('acme/m').catch((e: unknown) => e)
  t.ok(err instanceof PrivateRedirectError, 'another name for loopback: refused')
  t.match(err, { statusCode: 502, code: 'private_redirect', message: new RegExp(`^the hub redirected the listing of acme/m to localhost:${port} \\((127\\.0\\.0\\.1|::1)\\), a private address, and it was not followed; set hub\\.allow_private_redirects: true if your mirror serves from your network$`) })
  t.equal(seen.splice(0).length, 1, 'not retried, and the redirect\'s target was never asked')

  elsewhere = 'http://169.254.169.254/latest/meta-data/'
  await t.rejects(new HubClient({ endpoint, token: null }).resolveCommit('acme/m'), { code: 'private_redirect', message: /^the hub redirected the listing of acme\/m to 169\.254\.169\.254, a private address/ }, 'an address literal: refused on the URL')
  seen.splice(0)

  elsewhere = `http://localhost:${port}/moved`
  t.equal(await new HubClient({ endpoint, token: 'hf_x', allowPrivateRedirects: true }).resolveCommit('acme/m'), commit, 'allowed: followed')
  t.same(seen.splice(0), [`127.0.0.1:${port} /api/models/acme/m/revision/HEAD Bearer hf_x`, `localhost:${port} /moved -`], 'without the token on another origin')
})
