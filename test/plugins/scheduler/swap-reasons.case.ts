import t from 'tap'
import { post, serveTinyModels } from '../../helpers/inference.js'

// Why a swap happened, where an operator looks: /api/ps's `swap` and `estimates` on the model that came in, and
// /metrics' llamagate_model_evictions_total by reason (plugins/scheduler/swap-costs.ts names the reasons).

interface PsModel { name: string, swap: { replaced: string, reason: string } | null, estimates: Record<string, number | null> }

t.test('a swap for a waiting request: /api/ps says what it replaced and why, /metrics counts it by reason', async (t) => {
  const { url } = await serveTinyModels(t, ['acme/a', 'acme/b'], {
    limits: { max_loaded_models: 1 },
    default_options: { num_thread: 1, num_ctx: 256, num_parallel: 1, max_tokens: 2 },
  })
  const generate = async (model: string): Promise<void> => {
    const res = await post(`${url}/api/generate`, { model, prompt: 'hi', stream: false })
    t.equal(res.status, 200, `${model} answered`)
    await res.arrayBuffer()
  }
  const ps = async (): Promise<PsModel[]> => ((await (await fetch(`${url}/api/ps`)).json()) as { models: PsModel[] }).models

  await generate('acme/a')
  t.same((await ps()).map((m) => [m.name, m.swap]), [['acme/a', null]], 'acme/a took free room: it replaced nothing')
  await generate('acme/b')
  const [b, ...others] = await ps()
  t.equal(others.length, 0, 'room for one: acme/a went')
  t.equal(b!.name, 'acme/b')
  // acme/a sat idle with no request of its own expected (no return gap measured yet): given up at once.
  t.same(b!.swap, { replaced: 'acme/a', reason: 'idle-given-up' }, '/api/ps: acme/b replaced acme/a, which was idle with nothing expected')
  t.type(b!.estimates.load, 'number', 'its load was measured')
  t.equal(b!.estimates.return_gap, null, 'no request came back to it yet')

  await generate('acme/a')
  const metrics = await (await fetch(`${url}/metrics`)).text()
  const evictions = (model: string, reason: string): number => Number(new RegExp(`^llamagate_model_evictions_total\\{[^}]*model="${model.replace('/', '\\/')}"[^}]*reason="${reason}"[^}]*\\} (\\d+)`, 'm').exec(metrics)?.[1] ?? 0)
  t.equal(evictions('acme/a', 'idle-given-up'), 1, `/metrics: acme/a unloaded once for a waiting request, idle-given-up (${metrics.split('\n').filter((l) => l.startsWith('llamagate_model_evictions_total')).join('; ')})`)
  t.equal(evictions('acme/b', 'idle-given-up'), 1, 'and acme/b once, when acme/a came back')
  t.same((await ps()).map((m) => [m.name, m.swap]), [['acme/a', { replaced: 'acme/b', reason: 'idle-given-up' }]], 'acme/a back, in acme/b\'s place')
})
