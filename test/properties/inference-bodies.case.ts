import fc from 'fast-check'
import t from 'tap'
import { realisticModel } from '../helpers/realistic-models.js'
import { CASES } from './bodies.js'
import { anywhere } from './body-generators.js'
import { hostileValue } from './hostile-values.js'
import { checkWithStatusRoutes, holds, is2xx, is400, Tally } from './property-checks.js'
import { jsonReq } from './requests.js'
import { tinyApp } from './tiny-app.js'

// Property: "almost valid" bodies of the inference routes (the right field names; now and then a field with a
// hostile value, a field missing, a key that is not the route's), and valid bodies with one hostile value put
// at any depth, never answer 500, a stack trace or an error out of their surface's shape, and leave the status
// routes answering. Many are valid and run on the real llama-server with the tiny model (2 tokens); each route
// counts its 2xx and its 400s to show that the bodies reached both the model and the validation.

t.test('inference route bodies', async (t) => {
  const { app } = await tinyApp(t)
  await app.store.import('acme/rerank', await realisticModel('reranker'))

  for (const c of CASES) {
    await t.test(`POST ${c.url}: almost valid bodies, and valid ones with a hostile value at any depth`, async (t) => {
      const tally = new Tally()
      const body = fc.oneof({ weight: 3, arbitrary: c.body('almost') }, { weight: 1, arbitrary: anywhere(c.body('valid'), hostileValue) })
      const held = await holds(t, c.url, body, (b) => checkWithStatusRoutes(app, jsonReq('POST', c.url, b), tally, 'route'), { seed: c.seed, numRuns: c.numRuns })
      if (held) {
        t.ok(tally.count('route', is400) > 0, 'some bodies were refused 400')
        t.ok(tally.count('route', is2xx) > 0, 'some bodies were answered 2xx')
      }
      t.comment(tally.toString())
      if (process.env.LLAMAGATE_PROPERTIES_VERBOSE) t.comment(tally.sampleText())
    })
  }
})
