// Load options a client could use to hurt the server: num_thread 1024 started 1,036
// threads, n_gpu_layers 99999999999 was a 502 from a llama-server that could not start. Both are 400s now,
// before anything starts.
import { availableParallelism } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { writeTinyGguf } from '../../scripts/fixtures/tiny-model.js'
import { build, tempDir } from '../helpers/app.js'

t.test('num_thread past the CPUs and n_gpu_layers past any model: 400 saying so, nothing started', async (t) => {
  const app = await build(t)
  await app.store.import('acme/tiny', (await writeTinyGguf({ file: join(await tempDir(t), 'tiny.gguf') })).file)
  const chat = (options: Record<string, unknown>) => app.inject({ method: 'POST', url: '/api/chat', payload: { model: 'acme/tiny', stream: false, messages: [{ role: 'user', content: 'hi' }], options } })
  const cpus = availableParallelism()
  const threads = await chat({ num_thread: 1024 })
  t.equal(threads.statusCode, 400)
  t.match(threads.json(), { error: `options num_thread 1024: this machine has ${cpus} CPUs, so at most ${cpus}` })
  const layers = await chat({ n_gpu_layers: 99_999_999_999 })
  t.equal(layers.statusCode, 400)
  t.match(layers.json(), { error: /n_gpu_layers must be <= 10000/ })
  const ps = (await app.inject({ method: 'GET', url: '/api/ps' })).json() as { models: unknown[] }
  t.same(ps.models, [], 'no runtime was started')
})
