import { Agent, request } from 'node:http'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { hashSecret } from '../../../plugins/security/keys-file.js'
import { tempDir } from '../../helpers/app.js'
import { FakeHub, sha256 } from '../../helpers/fake-hub.js'
import { runCli, startServe, type ServeProcess } from '../../helpers/serve-process.js'
import { until } from '../../helpers/until.js'

type Test = Parameters<typeof tempDir>[0]

/** A config.yaml on a fresh data folder (its keys file: data/keys.yaml), with `extra` lines. */
async function setup (t: Test, extra = ''): Promise<{ config: string, keys: string }> {
  const dir = await tempDir(t)
  const config = join(dir, 'config.yaml')
  await writeFile(config, `data_dir: ${join(dir, 'data')}\nport: 0\nlog_level: info\nbuild_gpu_runtime: false\n${extra}`)
  return { config, keys: join(dir, 'data', 'keys.yaml') }
}

/** `llamagate serve` on the config, stopped when the test ends. */
async function serve (t: Test, config: string): Promise<ServeProcess> {
  const server = await startServe(['--config', config])
  t.teardown(async () => {
    server.child.kill('SIGKILL')
    await server.exited
  })
  return server
}

/** `llamagate keys add`'s secret. */
async function addKey (t: Test, config: string, name: string, ...flags: string[]): Promise<string> {
  const added = await runCli(['keys', 'add', name, '--config', config, ...flags])
  if (added.code !== 0) throw new Error(`keys add ${name} failed: ${added.stderr}`)
  return added.stdout.trim()
}

interface Answer { status: number, body: string, reused: boolean, port: number }

/** A GET through `agent` (keep-alive, one socket), saying whether the socket was one used before. */
function get (agent: Agent, address: string, path: string, key?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(`${address}${path}`, { agent, headers: key !== undefined ? { authorization: `Bearer ${key}` } : {} }, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (chunk) => { body += chunk })
      res.on('end', () => resolve({ status: res.statusCode!, body, reused: req.reusedSocket, port: req.socket!.localPort! }))
    })
    req.on('error', reject)
    req.end()
  })
}

t.test('a key added while the server runs works at once; revoked, it is refused on its very next request', async (t) => {
  // A pull from this hub stalls after 1,000 bytes: a streamed answer that stays open as long as the test wants.
  const hub = await FakeHub.start()
  t.teardown(() => hub.close())
  const model = Buffer.alloc(1_000_000, 7)
  hub.addRepo('acme/big-GGUF', { files: [{ path: 'big-Q4_K_M.gguf', content: model }] })
  hub.faults = { stallAfterBytes: 1000 }
  const { config } = await setup(t, `hub:\n  endpoint: ${hub.url}\n`)
  const server = await serve(t, config)
  const { address } = server
  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  t.teardown(() => agent.destroy())
  t.equal((await get(agent, address, '/api/tags')).status, 200, 'no keys file: keys are off')

  const secret = await addKey(t, config, 'bob', '--scope', 'infer,manage')
  t.equal((await get(agent, address, '/api/tags')).status, 401, 'the first key turned keys on, without a restart')
  const first = await get(agent, address, '/api/tags', secret)
  t.equal(first.status, 200, 'the new key is accepted on the next request')
  t.same(JSON.parse(first.body), { models: [] })
  const show = await fetch(`${address}/api/show`, { method: 'POST', headers: { authorization: `Bearer ${secret}` }, body: JSON.stringify({ model: 'acme/none' }) })
  t.equal(show.status, 404, 'a route of its scope answers as without keys')
  const listed = await runCli(['keys', 'list', '--config', config])
  t.match(listed.stdout, /\nbob +infer,manage +\* +none +/)
  t.notMatch(listed.stdout, secret, 'list never shows the secret')

  // A streamed answer of bob's on another connection, open while bob is revoked.
  const controller = new AbortController()
  t.teardown(() => controller.abort())
  const pull = await fetch(`${address}/api/pull`, {
    method: 'POST', signal: controller.signal,
    headers: { authorization: `Bearer ${secret}`, accept: 'application/x-ndjson' }, body: JSON.stringify({ model: 'acme/big-GGUF' }),
  })
  t.equal(pull.status, 200)
  let pullEnded = false
  const reading = pull.text().catch(() => '').finally(() => { pullEnded = true })
  await until('the pull to be downloading (and stalled)', () => (hub.cdnBytes.get(sha256(model)) ?? 0) >= 1000)

  const before = await get(agent, address, '/api/tags', secret)
  t.ok(before.reused, 'the keep-alive connection was used before')
  const revoke = await runCli(['keys', 'revoke', 'bob', '--config', config])
  t.equal(revoke.code, 0, revoke.stderr)
  // Right after the CLI exits: no wait, no retry.
  const refused = await get(agent, address, '/api/tags', secret)
  t.equal(refused.status, 401, 'refused on the very next request')
  t.same(JSON.parse(refused.body), { error: 'the API key "bob" was revoked' })
  t.ok(refused.reused && refused.port === before.port, 'on the same keep-alive connection that used the key before')
  t.notOk(pullEnded, 'while the key\'s pull is still streaming on another connection')
  // fetch's one connection is busy with the pull: this goes on a new one.
  const again = await fetch(`${address}/api/show`, { method: 'POST', headers: { authorization: `Bearer ${secret}` }, body: JSON.stringify({ model: 'acme/big-GGUF' }) })
  t.equal(again.status, 401, 'and on a new connection')
  t.same(await again.json(), { error: 'the API key "bob" was revoked' })
  controller.abort()
  await reading
})

t.test('a keys file broken by hand: the old keys stay in force, said in the log; the fixed file applies', async (t) => {
  const { config, keys } = await setup(t)
  const alice = await addKey(t, config, 'alice')
  const server = await serve(t, config)
  const { address } = server
  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  t.teardown(() => agent.destroy())
  const tags = (key?: string): Promise<number> => get(agent, address, '/api/tags', key).then((a) => a.status)
  t.equal(await tags(alice), 200)

  const good = await readFile(keys, 'utf8')
  // An editor saving in place truncates the file first; a request may come in that moment.
  await writeFile(keys, '')
  t.equal(await tags(), 401, 'an emptied file keeps keys on')
  t.equal(await tags(alice), 200, 'and the keys it held')
  await writeFile(keys, `${good}  - name: [carol\n`)
  t.equal(await tags(alice), 200, 'the old key still works')
  t.equal(await tags(), 401, 'and keys stay on: a typo opens nothing')
  const logged = await until('the server to log the broken file', () => server.output().split('\n').find((line) => line.includes('the keys file was not reloaded')))
  t.match(JSON.parse(logged), { level: 50, msg: 'the keys file was not reloaded: the keys it held before stay in force', err: /keys file .*keys\.yaml: not YAML/ })

  // Fixed by hand: alice plus a key written in by hash.
  const carol = 'carol-secret-written-by-hand-0123456789'
  await writeFile(keys, `${good}  - name: carol\n    hash: ${hashSecret(carol)}\n    created: 2025-01-01T00:00:00Z\n`)
  t.equal(await tags(carol), 200, 'the fixed file applies on the next request')
  t.equal(await tags(alice), 200)
  await until('the server to log the reload', () => server.output().includes('"msg":"keys file reloaded"'))
  t.pass('the reload is logged')
})
