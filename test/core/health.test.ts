import t from 'tap'
import { build } from '../helpers/app.js'

t.test('GET /api/health answers ok', async (t) => {
  const app = await build(t)
  const res = await app.inject({ method: 'GET', url: '/api/health' })
  t.equal(res.statusCode, 200)
  t.same(res.json(), { status: 'ok' })
})
