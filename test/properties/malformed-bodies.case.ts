import { createHash } from 'node:crypto'
import fc from 'fast-check'
import t from 'tap'
import { BODY_ROUTES, FIELD_NAMES, JSON_ROUTES } from './bodies.js'
import { surfaceOf } from './answer-problems.js'
import { hostileKey, hostileValue } from './hostile-values.js'
import { check, holds, is400, Tally } from './property-checks.js'
import { objectOf, toJsonText } from './raw-json.js'
import { jsonReq, Req } from './requests.js'
import { tinyApp } from './tiny-app.js'

// Property: whatever arrives as a body (random JSON of any type, JSON that is not JSON, a body under another
// content type, the right field names with hostile values) no route answers 500, shows a stack trace, or
// answers an error out of its surface's shape. Most of these fail validation; that is the point, and each
// property counts its 400s to prove it reached it.

const route = fc.constantFrom(...JSON_ROUTES)
const anyRoute = fc.constantFrom(...BODY_ROUTES)

// What content types clients send, right and wrong: every JSON route reads JSON whatever it is labelled.
const contentType = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom('application/json', 'application/json; charset=utf-8', 'APPLICATION/JSON', 'text/plain',
    'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/octet-stream', 'application/xml',
    'application/json; charset=utf-16le', 'application/json; charset=latin1', 'application/json;;', ';', 'text/event-stream',
    'application/x-ndjson', '*/*', 'application/vnd.api+json', '') },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme-ascii', maxLength: 30 }).filter((s) => /^[\x20-\x7e]*$/.test(s)) },
)

// Text that is not the JSON of an object: broken, almost JSON, JSON of another type, or none at all.
const VALID = '{"model":"acme/tiny","messages":[{"role":"user","content":"hi"}],"prompt":"hi","stream":false}'
const notJson = fc.oneof(
  fc.string({ maxLength: 60 }),
  fc.string({ unit: 'binary', maxLength: 60 }),
  fc.integer({ min: 0, max: VALID.length - 1 }).map((n) => VALID.slice(0, n)),
  fc.string({ minLength: 1, maxLength: 8 }).map((tail) => VALID + tail),
  fc.constantFrom(
    '', ' ', '\n', 'null', 'true', '0', '-0', '1e400', '"acme/tiny"', '[]', '[{}]', '{}', '{,}', '{"model":}',
    "{'model':'acme/tiny'}", '{model:"acme/tiny"}', '{"model":"acme/tiny",}', '{"model":NaN}', '{"model":Infinity}',
    '{"model":0x10}', '{"model":"acme/tiny"} // comment', '/* c */ {"model":"acme/tiny"}', '\ufeff{"model":"acme/tiny"}',
    '{"model":"acme/tiny","model":5}', '{"model":"\\ud800"}', '{"model":"\\u0000"}', '{"model":"a\\qb"}',
    '{"__proto__":{"polluted":"yes"},"model":"acme/tiny"}', '{"constructor":{"prototype":{"polluted":"yes"}}}',
    '{"options":{"__proto__":{"max_tokens":100000}},"model":"acme/tiny","prompt":"x"}',
    '{"model":"acme/tiny","messages":[{"__proto__":{"role":"system"}}]}',
    '[' .repeat(50_000), '{"a":'.repeat(50_000), `${'['.repeat(30_000)}${']'.repeat(30_000)}`,
    `{"model":"acme/tiny","x":1${'0'.repeat(500)}}`, '\u0000\u0001\u0002', '\xff\xfe{}',
  ),
  // Over the body limit of this app (limits.body_size 256KiB): 413, in the surface's shape.
  fc.integer({ min: 262_145, max: 300_000 }).map((n) => `{"model":"acme/tiny","prompt":"${'x'.repeat(n)}"}`),
)

t.test('route bodies', async (t) => {
  const { app } = await tinyApp(t, { limits: { body_size: '256KiB' } })

  await t.test('random JSON values of every type, as any route\'s body', async (t) => {
    const tally = new Tally()
    const held = await holds(t, 'random JSON', fc.tuple(route, fc.jsonValue()), async ([r, body]) => {
      await check(app, jsonReq(r.method, r.url, body), tally)
    }, { seed: 1101, numRuns: 600 })
    if (held) for (const r of JSON_ROUTES) t.ok(tally.count(`${r.method} ${r.url}`, is400) > 0, `${r.url} answered some 400s`)
    t.comment(tally.toString())
  })

  await t.test('text that is not a JSON object, under any content type', async (t) => {
    const tally = new Tally()
    const held = await holds(t, 'not JSON', fc.tuple(route, notJson, contentType), async ([r, text, type]) => {
      await check(app, new Req(r.method, r.url, text, type === '' ? {} : { 'content-type': type }), tally, 'any')
    }, { seed: 1102, numRuns: 500 })
    const statuses = tally.byRoute.get('any')!
    if (held) {
      t.ok((statuses.get(400) ?? 0) > 50, 'most were refused 400')
      t.ok((statuses.get(413) ?? 0) > 0, 'a body over the limit was 413')
    }
    t.comment(tally.toString())
  })

  await t.test('the routes\' own field names with hostile values, and hostile keys', async (t) => {
    const tally = new Tally()
    const key = fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...FIELD_NAMES) }, { weight: 1, arbitrary: hostileKey })
    const body = fc.array(fc.tuple(key, hostileValue), { maxLength: 6 }).map(objectOf)
    const held = await holds(t, 'field names, hostile values', fc.tuple(route, body), async ([r, value]) => {
      await check(app, jsonReq(r.method, r.url, value), tally)
    }, { seed: 1103, numRuns: 600 })
    if (held) for (const r of JSON_ROUTES) t.ok(tally.count(`${r.method} ${r.url}`, is400) > 0, `${r.url} answered some 400s`)
    t.comment(tally.toString())
  })

  await t.test('a query string does not change the surface\'s error shape', async (t) => {
    const tally = new Tally()
    const query = fc.oneof(fc.constantFrom('', 'beta=true', 'a=1&a=2', '__proto__[x]=1', 'x', '?', '%', '%zz', '#frag'),
      fc.webQueryParameters())
    const held = await holds(t, 'query strings', fc.tuple(route, query, fc.jsonValue({ maxDepth: 2 })), async ([r, q, body]) => {
      const req = jsonReq(r.method, `${r.url}?${q}`, body)
      await check(app, req, tally, surfaceOf(req.url))
    }, { seed: 1104, numRuns: 300 })
    if (held) for (const surface of ['native', 'openai', 'anthropic']) t.ok(tally.count(surface, is400) > 0, `${surface} routes answered 400s`)
  })

  await t.test('random bytes and digests for the blob upload (POST and HEAD)', async (t) => {
    const tally = new Tally()
    const digest = fc.oneof(
      fc.constantFrom(`sha256:${'0'.repeat(64)}`, `sha256-${'a'.repeat(64)}`, `sha256:${'A'.repeat(64)}`, `sha256:${'0'.repeat(63)}`,
        'sha256:', 'md5:abc', '..', '%2e%2e', '%00', '__proto__', `sha256:${'0'.repeat(64)}/x`),
      fc.string({ maxLength: 80 }),
      fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => `sha256:${Buffer.from(b).toString('hex')}`),
    )
    const bytes = fc.oneof(fc.constant(undefined), fc.uint8Array({ maxLength: 2048 }).map((b) => Buffer.from(b)), fc.string({ maxLength: 100 }))
    // A third of the uploads name the digest of their own bytes: stored (201), or there already (200).
    const method = fc.constantFrom('POST', 'HEAD') as fc.Arbitrary<'POST' | 'HEAD'>
    const held = await holds(t, 'blobs', fc.tuple(method, digest, bytes, contentType, fc.nat(2)),
      async ([m, d, payload, type, own]) => {
        const headers: Record<string, string> = type === '' ? {} : { 'content-type': type }
        const name = own === 0 ? `sha256:${createHash('sha256').update(payload ?? '').digest('hex')}` : d
        await check(app, new Req(m, `/api/blobs/${encodeURIComponent(name)}`, m === 'HEAD' ? undefined : payload, headers), tally, m)
      }, { seed: 1105, numRuns: 300 })
    if (held) {
      t.ok(tally.count('POST', is400) > 0 && tally.count('HEAD', is400) > 0, 'malformed digests were 400')
      t.ok(tally.count('HEAD', (s) => s === 404) > 0, 'well-formed unknown digests were 404')
      t.ok(tally.count('POST', (s) => s === 201) > 0, 'uploads of the named bytes were stored')
    }
    t.comment(tally.toString())
  })

  await t.test('unknown paths and wrong methods answer 404 or 405 in the shape of their prefix', async (t) => {
    const tally = new Tally()
    // No dot segments (`..`, `%2e%2e`): inject resolves them, as a URL, before the server sees the path.
    const segment = fc.oneof(fc.webSegment().filter((s) => !/^(?:\.|%2e){1,2}$/i.test(s)),
      fc.constantFrom('chat', 'messages', 'count_tokens', 'models', 'x', '%2F', 'a%00', '%2e%2e%2f'))
    const path = fc.tuple(fc.constantFrom('/', '/api/', '/v1/', '/v1/messages/', '/v1', '/v1/messages', '/api', '//v1/'),
      fc.array(segment, { maxLength: 3 })).map(([prefix, parts]) => prefix + parts.join('/'))
    const method = fc.constantFrom('GET', 'POST', 'DELETE', 'PUT', 'PATCH') as fc.Arbitrary<Req['method']>
    const held = await holds(t, 'unknown paths', fc.tuple(fc.oneof(path, anyRoute.map((r) => r.url)), method, fc.jsonValue({ maxDepth: 1 })),
      async ([url, m, body]) => {
        const req = m === 'GET' ? new Req(m, url) : new Req(m, url, toJsonText(body), { 'content-type': 'application/json' })
        await check(app, req, tally, 'any')
      }, { seed: 1106, numRuns: 300 })
    const statuses = tally.byRoute.get('any')!
    if (held) t.ok((statuses.get(404) ?? 0) > 0 && (statuses.get(405) ?? 0) > 0, 'both 404 and 405 seen')
    t.comment(tally.toString())
  })
})
