// Fair queueing on a real runtime: a freed slot goes round the API keys waiting for it, so a key flooding a model's
// queue delays another key's request by a turn, not by its whole backlog (the line itself: test/plugins/leases).
import { join } from 'node:path'
import t from 'tap'
import { hashSecret, writeKeysFile } from '../../../plugins/security/keys-file.js'
import { firstEvent, importLongContextModel, post, serveTinyModels } from '../../helpers/inference.js'
import { tempDir } from '../../helpers/app.js'
import { until } from '../../helpers/until.js'
import { lowPriorityWhileHeld } from '../../helpers/held-priority.js'

const SECRETS = { flood: 'lg-test-flood-0123456789abcdef', single: 'lg-test-single-0123456789abcde' }

t.test('a real runtime: key B\'s one request is served within two grants while key A has eight queued', async (t) => {
  const dir = await tempDir(t)
  const keysFile = join(dir, 'keys.yaml')
  await writeKeysFile(keysFile, {
    keys: Object.entries(SECRETS).map(([name, secret]) => ({ name, hash: hashSecret(secret), scopes: ['infer' as const], models: ['*'], limits: {}, created: new Date().toISOString() })),
  })
  const { app, url } = await serveTinyModels(t, ['acme/tiny'], { auth: { keys_file: keysFile }, default_options: { num_ctx: 4096, num_parallel: 1 },
    // Room for the answer that holds the slot: with 4,096 it ends when its context fills.
    models: { 'acme/long': { options: { num_ctx: 32_768 } } } })
  await importLongContextModel(t, app, 'acme/long')
  const as = (key: keyof typeof SECRETS) => ({ authorization: `Bearer ${SECRETS[key]}` })
  const queued = (): number => app.scheduler.requestCounts().get('acme/long')?.queued ?? 0
  // The slot is held by a long answer of A's until every request below is in line.
  const holder = new AbortController()
  const long = await post(`${url}/v1/chat/completions`, { model: 'acme/long', stream: true, max_tokens: 32_000, messages: [{ role: 'user', content: 'go on' }] }, as('flood'), holder.signal)
  t.equal(long.status, 200)
  const streaming = await firstEvent(long)
  const restoreHolder = await lowPriorityWhileHeld(t, url, 'acme/long', as('flood'))
  const finished: string[] = []
  const ask = (name: string, key: keyof typeof SECRETS): Promise<number> =>
    post(`${url}/api/chat`, { model: 'acme/long', stream: false, messages: [{ role: 'user', content: 'hi' }], options: { max_tokens: 4 } }, as(key))
      .then(async (res) => { await res.arrayBuffer(); finished.push(name); return res.status })
  const flood: Array<Promise<number>> = []
  for (let i = 1; i <= 8; i++) {
    flood.push(ask(`a${i}`, 'flood'))
    // In this order: A's requests are all ahead of B's by arrival.
    await until(`A's request ${i} to be in line`, () => queued() === i)
  }
  const single = ask('b', 'single')
  await until('B\'s request to be in line', () => queued() === 9)
  restoreHolder()
  holder.abort()
  await streaming.rest().catch(() => {})
  t.same(await Promise.all([...flood, single]), Array(9).fill(200), 'every request answered')
  t.comment(`served in the order ${finished.join(' ')}`)
  t.ok(finished.indexOf('b') <= 1, `B was served within the first two grants (${finished.indexOf('b') + 1}), not after A's eight`)
  t.same(finished.filter((n) => n !== 'b'), ['a1', 'a2', 'a3', 'a4', 'a5', 'a6', 'a7', 'a8'], 'A\'s own requests in their order')
})
