// Fair queueing: a freed slot goes round the API keys waiting for it, so a key flooding a model's queue
// delays another key's request by a turn, not by its whole backlog. Without keys the queue stays first come, first served.
import { join } from 'node:path'
import t from 'tap'
import { hashSecret, writeKeysFile } from '../../../plugins/security/keys-file.js'
import type { ResolvedOptions } from '../../../core/request-options.js'
import { Instance } from '../../../plugins/scheduler/instance.js'
import { firstEvent, importLongContextModel, post, serveTinyModels } from '../../helpers/inference.js'
import { tempDir } from '../../helpers/app.js'
import { until } from '../../helpers/until.js'

/** An instance with one slot, taken: every request after it waits in line. */
function busyInstance (): Instance {
  const instance = new Instance({ name: 'acme/tiny', format: 'gguf', size: 1 }, { num_parallel: 1 } as ResolvedOptions['load'], 1, Infinity)
  instance.tryTake()
  return instance
}

/** Queues a request of `key` (undefined: none) and records its name in `granted` when it gets the slot. */
function queue (instance: Instance, granted: string[], name: string, key?: string, signal?: AbortSignal): { ticket: object, done: Promise<boolean> } {
  const ticket = {}
  const done = instance.enqueue(signal, ticket, key)
  done.then((ok) => { if (ok) granted.push(name) }, () => {})
  return { ticket, done }
}

/** Hands the slot over `n` times, letting each grant's promise settle. */
async function handOver (instance: Instance, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    instance.handOver()
    await new Promise((resolve) => setImmediate(resolve))
  }
}

t.test('Instance: turns go round the keys, positions say the grants ahead, and the order repeats round after round', async (t) => {
  const instance = busyInstance()
  const granted: string[] = []
  const a = [1, 2, 3, 4].map((i) => queue(instance, granted, `a${i}`, 'alice'))
  const b = queue(instance, granted, 'b1', 'bob')
  const c = [1, 2].map((i) => queue(instance, granted, `c${i}`, 'carol'))
  t.equal(instance.queued, 7)
  t.same([instance.queuedOf('alice'), instance.queuedOf('bob'), instance.queuedOf('carol'), instance.queuedOf(undefined)], [4, 1, 2, 0])
  const expected = ['a1', 'b1', 'c1', 'a2', 'c2', 'a3', 'a4']
  const positions = Object.fromEntries([...a.map((q, i) => [`a${i + 1}`, q]), ['b1', b], ...c.map((q, i) => [`c${i + 1}`, q])]
    .map(([name, q]) => [name as string, instance.positionOf((q as { ticket: object }).ticket)]))
  t.same(expected.map((name) => positions[name]), [1, 2, 3, 4, 5, 6, 7], 'each position is the number of grants up to it')
  await handOver(instance, 7)
  t.same(granted, expected, 'granted in the order the positions said')
  t.equal(instance.queued, 0)
  t.equal(instance.active, 1, 'the slot stayed taken through each hand-over')
  instance.handOver()
  t.ok(instance.idle, 'freed once nobody waits')
})

t.test('Instance: a key arriving while another floods goes next, and one served least recently goes before one just served', async (t) => {
  const instance = busyInstance()
  const granted: string[] = []
  for (let i = 1; i <= 5; i++) queue(instance, granted, `a${i}`, 'alice')
  await handOver(instance, 2)
  t.same(granted, ['a1', 'a2'])
  const b = queue(instance, granted, 'b1', 'bob')
  t.equal(instance.positionOf(b.ticket), 1, 'next, ahead of the flood')
  await handOver(instance, 1)
  t.same(granted, ['a1', 'a2', 'b1'])
  // Bob asks again at once: alice was served longer ago, so she goes first.
  const b2 = queue(instance, granted, 'b2', 'bob')
  t.equal(instance.positionOf(b2.ticket), 2)
  await handOver(instance, 4)
  t.same(granted, ['a1', 'a2', 'b1', 'a3', 'b2', 'a4', 'a5'])
})

t.test('Instance: without keys, first come, first served; a request that leaves the line leaves no gap', async (t) => {
  const instance = busyInstance()
  const granted: string[] = []
  const leaving = new AbortController()
  const queued = [1, 2, 3, 4].map((i) => queue(instance, granted, `r${i}`, undefined, i === 2 ? leaving.signal : undefined))
  t.same(queued.map((q) => instance.positionOf(q.ticket)), [1, 2, 3, 4])
  leaving.abort(new Error('client gone'))
  await t.rejects(queued[1]!.done, { message: 'client gone' })
  t.same(queued.map((q) => instance.positionOf(q.ticket)), [1, 0, 2, 3], 'the one that left is nowhere; those after it moved up')
  t.equal(instance.queued, 3)
  await handOver(instance, 3)
  t.same(granted, ['r1', 'r3', 'r4'])
})

t.test('Instance: dismissed waiters of every key hear false', async (t) => {
  const instance = busyInstance()
  const granted: string[] = []
  const all = [queue(instance, granted, 'a', 'alice'), queue(instance, granted, 'b', 'bob'), queue(instance, granted, 'n')]
  instance.dismissWaiters()
  t.same(await Promise.all(all.map((q) => q.done)), [false, false, false])
  t.equal(instance.queued, 0)
  t.same(granted, [])
})

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
  holder.abort()
  await streaming.rest().catch(() => {})
  t.same(await Promise.all([...flood, single]), Array(9).fill(200), 'every request answered')
  t.comment(`served in the order ${finished.join(' ')}`)
  t.ok(finished.indexOf('b') <= 1, `B was served within the first two grants (${finished.indexOf('b') + 1}), not after A's eight`)
  t.same(finished.filter((n) => n !== 'b'), ['a1', 'a2', 'a3', 'a4', 'a5', 'a6', 'a7', 'a8'], 'A\'s own requests in their order')
})
