// The example plugin's own test, as its author writes it: `llamagate/testing` starts the whole gateway in the test's
// process (a tiny model, the CPU llama-server) and loads the plugin by its package name, as config.yaml would.
// Run with `node --test` once compiled (the suite runs it: test/core/plugin-api.case.ts).
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { startTestGateway } from 'llamagate/testing'

test('the greeting route answers beside a served model', async (t) => {
  const gateway = await startTestGateway({
    plugins: [{ path: 'llamagate-plugin-greeting', options: { greeting: 'Welcome' } }],
    models: ['test/tiny'],
  })
  t.after(() => gateway.close())

  const greeting = await fetch(`${gateway.url}/api/greeting?who=Ann`)
  assert.deepEqual(await greeting.json(), { text: 'Welcome, Ann', models: 1 })
  const refused = await fetch(`${gateway.url}/api/greeting?who=`)
  assert.equal(refused.status, 400)

  const answer = await fetch(`${gateway.url}/api/generate`, {
    method: 'POST',
    body: JSON.stringify({ model: 'test/tiny', prompt: 'hi', stream: false, options: { num_predict: 3, ignore_eos: true } }),
  })
  assert.equal(answer.status, 200)
  assert.equal((await answer.json() as { eval_count: number }).eval_count, 3)
})
