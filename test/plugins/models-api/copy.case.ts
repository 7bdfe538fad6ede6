import { stat } from 'node:fs/promises'
import { join } from 'node:path'
import { Ollama } from 'ollama'
import t from 'tap'
import { post, serveTinyModels } from '../../helpers/inference.js'

t.test('ollama.copy: an alias that shares the files, answers, and outlives the original', async (t) => {
  const { app, url } = await serveTinyModels(t)
  const ollama = new Ollama({ host: url })
  await ollama.copy({ source: 'acme/tiny', destination: 'me/alias' })
  const source = app.store.get('acme/tiny')
  const alias = app.store.get('me/alias')
  t.equal(alias.name, 'me/alias')
  t.equal(alias.size, source.size)
  const file = source.manifest.files[0]!.name
  const [a, b] = await Promise.all([stat(join(source.dir, file)), stat(join(alias.dir, file))])
  t.equal(a.ino, b.ino, 'the same file on disk (hard link): no byte copied')
  t.match(alias.manifest.source, { type: 'copy', model: 'acme/tiny', link: 'hardlink' })
  const names = (await ollama.list()).models.map((m) => m.name)
  t.ok(names.includes('acme/tiny') && names.includes('me/alias'), 'both listed')
  const answer = await ollama.chat({ model: 'me/alias', messages: [{ role: 'user', content: 'hi' }], options: { num_predict: 3 } })
  t.equal(answer.model, 'me/alias', 'the alias answers under its own name')
  t.equal(answer.eval_count, 3)
  await ollama.delete({ model: 'acme/tiny' })
  t.notOk(app.store.find('acme/tiny'), 'the original is gone')
  const after = await ollama.chat({ model: 'me/alias', messages: [{ role: 'user', content: 'hi' }], options: { num_predict: 2 } })
  t.equal(after.eval_count, 2, 'the alias still answers after the original was deleted')
})

t.test('copy over an existing name replaces it; bad copies are 4xx with a message', async (t) => {
  const { app, url } = await serveTinyModels(t, ['acme/one', 'acme/two'])
  const replaced = await post(`${url}/api/copy`, { source: 'acme/one', destination: 'acme/two' })
  t.equal(replaced.status, 200)
  t.same(await replaced.json(), { status: 'copied' })
  t.equal(app.store.get('acme/two').manifest.files[0]!.sha256, app.store.get('acme/one').manifest.files[0]!.sha256, 'acme/two now holds acme/one\'s weights')
  const cases: Array<[string, unknown, number, RegExp]> = [
    ['unknown source', { source: 'acme/nope', destination: 'acme/x' }, 404, /model "acme\/nope" not found/],
    ['invalid destination', { source: 'acme/one', destination: 'no-owner' }, 400, /invalid model name/],
    ['the same name', { source: 'acme/one', destination: 'ACME/one' }, 400, /is the model "acme\/one" itself/],
    ['no destination', { source: 'acme/one' }, 400, /destination/],
  ]
  for (const [what, body, status, message] of cases) {
    const res = await post(`${url}/api/copy`, body)
    t.equal(res.status, status, `${what}: ${status}`)
    t.match(await res.json(), { error: message }, `${what}: says why`)
  }
  t.notOk(app.store.find('acme/x'), 'nothing half-made listed')
})
