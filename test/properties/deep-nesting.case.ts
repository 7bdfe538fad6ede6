import t from 'tap'
import { realisticModel } from '../helpers/realistic-models.js'
import { CASES } from './bodies.js'
import { anywhere } from './body-generators.js'
import { deepValue } from './hostile-values.js'
import { checkWithStatusRoutes, holds, Tally } from './property-checks.js'
import { jsonReq } from './requests.js'
import { tinyApp } from './tiny-app.js'

// Property: nesting deep enough to overflow a recursive walk or JSON.stringify (1 000 to 12 000 levels of
// arrays, objects, `content` chains, parts), put anywhere in a valid body of an inference route, is answered (a
// refusal, an answer, a runtime's 4xx), never with a 500, nor with a stack overflow reported as the runtime's
// failure. Few runs per route: each depth costs little to send, but a failure costs a second to report.

t.test('deep nesting in inference route bodies', async (t) => {
  const { app } = await tinyApp(t)
  await app.store.import('acme/rerank', await realisticModel('reranker'))

  for (const c of CASES) {
    await t.test(`POST ${c.url}`, async (t) => {
      const tally = new Tally()
      const held = await holds(t, `${c.url} deep`, anywhere(c.body('valid'), deepValue),
        (b) => checkWithStatusRoutes(app, jsonReq('POST', c.url, b), tally, 'route'),
        { seed: c.seed + 100, numRuns: 12, timeLimitMs: 15_000 })
      if (held) t.ok(tally.count('route', () => true) >= 12, 'every body was answered')
      t.comment(tally.toString())
    })
  }
})
