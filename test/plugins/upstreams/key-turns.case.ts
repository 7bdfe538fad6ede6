import type { ServerResponse } from 'node:http'
import { join } from 'node:path'
import t from 'tap'
import { hashSecret, writeKeysFile } from '../../../plugins/security/keys-file.js'
import { build, tempDir } from '../../helpers/app.js'
import { post } from '../../helpers/inference.js'
import { until } from '../../helpers/until.js'
import { fakeUpstream, json } from './fake-upstream.js'

// An upstream's model waits in the same per-key line as a local one's (plugins/leases/key-line.ts): a key flooding
// an upstream held to one request at a time delays another key's request by a turn, not by its backlog, and a key's
// queue share keeps it from filling the line.

const SECRETS = { flood: 'lg-test-flood-0123456789abcdef', single: 'lg-test-single-0123456789abcde', shared: 'lg-test-shared-0123456789abcde' }
const as = (key: keyof typeof SECRETS): Record<string, string> => ({ authorization: `Bearer ${SECRETS[key]}` })

t.test('an upstream\'s model: turns go round the keys, and a key past its queue share is refused', async (t) => {
  const dir = await tempDir(t)
  const keysFile = join(dir, 'keys.yaml')
  await writeKeysFile(keysFile, {
    keys: (Object.keys(SECRETS) as Array<keyof typeof SECRETS>).map((name) => ({
      name, hash: hashSecret(SECRETS[name]), scopes: ['infer' as const], models: ['*'], created: new Date().toISOString(),
      limits: name === 'shared' ? { queue_share: 0.2 } : {},
    })),
  })
  // The upstream answers each chat only when the test lets it: the order it is asked in is the order of the turns.
  const held: Array<{ who: string, res: ServerResponse }> = []
  const upstream = await fakeUpstream(t, (req, res) => {
    if (req.url === '/v1/models') return json(res, 200, { object: 'list', data: [{ id: 'far/model', object: 'model' }] })
    held.push({ who: (JSON.parse(req.body) as { messages: Array<{ content: string }> }).messages[0]!.content, res })
  })
  const app = await build(t, {
    auth: { keys_file: keysFile },
    upstreams: [{ name: 'far', url: upstream.origin, kind: 'openai', max_concurrent: 1 }],
    limits: { queue_length: 12 },
  })
  const url = await app.listen({ host: '127.0.0.1', port: 0 })
  await until('the upstream\'s model listed', () => app.upstreams.find('far/model') !== null)
  const queued = (): number => app.leases.requestCounts().get('far/model')?.queued ?? 0
  const ask = (who: string, key: keyof typeof SECRETS): Promise<Response> =>
    post(`${url}/v1/chat/completions`, { model: 'far/model', messages: [{ role: 'user', content: who }], max_tokens: 4 }, as(key))

  const first = ask('a0', 'flood')
  await until('the first request at the upstream', () => held.length === 1)
  const flood: Array<Promise<Response>> = []
  for (let i = 1; i <= 5; i++) {
    flood.push(ask(`a${i}`, 'flood'))
    await until(`the flood's request ${i} in line`, () => queued() === i)
  }
  const single = ask('b', 'single')
  await until('the single request in line', () => queued() === 6)
  // A fifth of a line of 12: two of its requests may wait; the third is refused at once.
  const shared = [ask('c1', 'shared'), ask('c2', 'shared')]
  await until('the shared key\'s two in line', () => queued() === 8)
  const refused = await ask('c3', 'shared')
  t.equal(refused.status, 429, 'past its queue share')
  t.match((await refused.json() as { error: { message: string } }).error.message, /"shared" has 2 requests waiting for model "far\/model".*queue_share 0\.2/)
  t.ok(Number(refused.headers.get('retry-after')) >= 1, 'with a Retry-After')

  const answered: string[] = []
  // Each answer frees the one turn: the next in line is sent.
  for (let n = 1; n <= 9; n++) {
    const turn = held[n - 1]!
    answered.push(turn.who)
    json(turn.res, 200, { id: `c-${n}`, object: 'chat.completion', created: 0, model: 'far/model', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }], usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 } })
    if (n < 9) await until(`turn ${n + 1} at the upstream`, () => held.length === n + 1)
  }
  const statuses = await Promise.all([first, ...flood, single, ...shared].map(async (r) => { const res = await r; await res.arrayBuffer(); return res.status }))
  t.same(statuses, Array(9).fill(200), 'every request in line answered')
  t.comment(`served in the order ${answered.join(' ')}`)
  t.ok(answered.indexOf('b') <= 2, `the single key's request went within the first turns after the one running (${answered.indexOf('b')}), not after the flood's five`)
  t.ok(answered.indexOf('c1') <= 3, `the shared key's first too (${answered.indexOf('c1')})`)
  t.same(answered.filter((w) => w.startsWith('a')), ['a0', 'a1', 'a2', 'a3', 'a4', 'a5'], 'the flood\'s own requests in their order')
  t.equal(queued(), 0)
})
