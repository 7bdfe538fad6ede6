import { join } from 'node:path'
import t, { type Test } from 'tap'
import { writeTinyGguf } from '../../../scripts/fixtures/tiny-model.js'
import { buildTestApp, tempDir, testConfig } from '../../helpers/app.js'
import { post, serveTinyModels } from '../../helpers/inference.js'
import { cpuRuntime } from '../../helpers/runtime.js'
import { until } from '../../helpers/until.js'
import { conversation, recordQuestions, stopBack, type Back } from './two-backs.js'

// docs/deploy/kubernetes.yaml on loopback: three replicas on one models folder (each its own data_dir), and one
// front llamagate listing each as an upstream of kind llamagate, with no prefix and with the replicas' key, routing
// by conversation. A model imported through one replica is served by all, listed once by the front; each
// conversation stays on one replica and they spread over several; a replica gone, its conversations move to the
// others, the others' stay where they are, and the model stays listed.

const KEY = 'lg-test-replica-key-0123456789'
const MODEL = 'acme/chat'
const NAMES = ['llamagate-0', 'llamagate-1', 'llamagate-2']
const CONVERSATIONS = [0, 1, 2, 3, 4, 5, 6, 7]

/** A replica on the shared models folder, with a data folder of its own, taking only the front's key. */
async function serveReplica (t: Test, modelsDir: string): Promise<Back> {
  const runtime = await cpuRuntime()
  const app = await buildTestApp(await testConfig(t, {
    runtime: 'cpu',
    runtimes: { cpu: { bin: runtime.binDir } },
    models_dir: modelsDir,
    auth: { api_keys: [KEY] },
    default_options: { num_ctx: 512, num_parallel: 2, max_tokens: 3, ignore_eos: true },
  }))
  t.teardown(() => app.close())
  const asked = recordQuestions(app)
  const url = await app.listen({ host: '127.0.0.1', port: 0 })
  return { app, url, port: Number(new URL(url).port), asked }
}

const listed = async (url: string, headers: Record<string, string> = {}): Promise<string[]> => {
  const res = await fetch(`${url}/api/tags`, { headers })
  return ((await res.json()) as { models: Array<{ name: string }> }).models.map((m) => m.name)
}

t.test('replicas on one models folder behind one front: one listing, each conversation on one replica, failover', async (t) => {
  const modelsDir = await tempDir(t, 'llamagate-shared-models-')
  const replicas = [await serveReplica(t, modelsDir), await serveReplica(t, modelsDir), await serveReplica(t, modelsDir)]
  t.equal(new Set(replicas.map((r) => r.app.config.dataDir)).size, 3, 'each replica has its own data folder')
  const front = await serveTinyModels(t, [], {
    upstreams: replicas.map((r, i) => ({ name: NAMES[i], url: r.url, kind: 'llamagate', key: KEY })),
    upstream_routing: 'prefix',
  })
  await until('every replica healthy', () => NAMES.every((name) => front.app.upstreams.stateOf(name)?.healthy === true))
  t.same(await listed(front.url), [], 'nothing stored yet')

  // Imported through one replica: the others see it through the shared store's change feed.
  const file = join(await tempDir(t, 'llamagate-models-'), 'chat.gguf')
  await writeTinyGguf({ file, seed: 7, name: MODEL })
  await replicas[0]!.app.store.import(MODEL, file)
  const auth = { authorization: `Bearer ${KEY}` }
  for (const [i, replica] of replicas.entries()) {
    t.same(await until(`${NAMES[i]} lists it`, async () => { const names = await listed(replica.url, auth); return names.length > 0 ? names : null }), [MODEL], `${NAMES[i]} lists it`)
  }
  // The front sees it at its next probe of each replica (every 10 s; asked now here).
  await Promise.all(front.app.config.upstreams.map((u) => front.app.upstreams.recheck(u)))
  t.same(await listed(front.url), [MODEL], 'the front lists it once, under its own name')
  const models = (await (await fetch(`${front.url}/v1/models`)).json()) as { data: Array<{ id: string }> }
  t.same(models.data.map((m) => m.id), [MODEL], 'and so does /v1/models')

  const turn = async (n: number, at: number): Promise<void> => {
    const res = await post(`${front.url}/v1/chat/completions`, { model: MODEL, messages: conversation(n, at), max_tokens: 3 })
    t.equal(res.status, 200, `conversation ${n}, turn ${at}: ${res.status}`)
    await res.text()
  }
  /** Which replicas each conversation's requests went to, and how many. */
  const where = (): Array<Array<[string, number]>> => CONVERSATIONS.map((n) =>
    replicas.map((r, i): [string, number] => [NAMES[i]!, r.asked.filter((q) => q === `question ${n}`).length]).filter(([, count]) => count > 0))

  for (let at = 0; at < 2; at++) for (const n of CONVERSATIONS) await turn(n, at)
  const before = where()
  t.comment(`before: ${before.map((w, n) => `${n}→${w.map(([name, count]) => `${name}×${count}`).join('+')}`).join(' ')}`)
  for (const n of CONVERSATIONS) t.ok(before[n]!.length === 1 && before[n]![0]![1] === 2, `conversation ${n}: both turns on one replica (${JSON.stringify(before[n])})`)
  const home = before.map((w) => w[0]![0])
  t.ok(new Set(home).size > 1, `the conversations spread over ${new Set(home).size} replicas`)

  // The replica with the most conversations goes away (its port refuses); nothing told the front's probe.
  const gone = NAMES.map((name) => [name, home.filter((h) => h === name).length] as const).sort((a, b) => b[1] - a[1])[0]![0]
  const moved = CONVERSATIONS.filter((n) => home[n] === gone)
  await stopBack(replicas[NAMES.indexOf(gone)]!)
  for (const n of CONVERSATIONS) await turn(n, 2)
  const after = where()
  for (const n of CONVERSATIONS) {
    const third = after[n]!.filter(([name, count]) => count > (before[n]!.find(([b]) => b === name)?.[1] ?? 0)).map(([name]) => name)
    if (home[n] === gone) t.ok(third.length === 1 && third[0] !== gone, `conversation ${n} (was on ${gone}) answered by ${third.join(', ')}`)
    else t.same(third, [home[n]], `conversation ${n} stays on ${home[n]}`)
  }
  // A moved conversation's next turn goes where its last one went.
  const next = after[moved[0]!]!.find(([name]) => name !== gone)!
  await turn(moved[0]!, 3)
  t.equal(replicas[NAMES.indexOf(next[0])]!.asked.filter((q) => q === `question ${moved[0]}`).length, next[1] + 1, `conversation ${moved[0]}'s next turn on ${next[0]} again`)

  // The failed request made the front probe it again: it is down, and the model is still listed, once.
  await until(`${gone} seen down`, () => front.app.upstreams.stateOf(gone)?.healthy === false)
  t.same(await listed(front.url), [MODEL], 'the front still lists the model, once')
})
