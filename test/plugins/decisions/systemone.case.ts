import t, { type Test } from 'tap'
import { post, serveRealisticModels, sharedServer } from '../../helpers/inference.js'
import { referenceProbabilities, type RefQuestion } from '../../helpers/decision-reference.js'
import { realisticModel } from '../../helpers/realistic-models.js'

const served = sharedServer(() => serveRealisticModels(t, { 'acme/openjev': 'openjev', 'acme/lev': 'lev', 'acme/d1': 'd1', 'acme/chat': 'qwen25' }))

const STATE = { ticket: 'My order #4471 never arrived and I want my money back.', plan: 'pro', order: { items: ['phone case', 'charger'], id: 4471 } }
const QUESTIONS: Record<string, RefQuestion> = {
  route: { type: 'choice', instructions: 'Which team should take this ticket?', criteria: { refunds: 'wants money back', shipping: null, sales: 'wants to buy more' } },
  pair: { type: 'choice', instructions: 'Is it about the order or the account?', criteria: { order: null, account: null } },
  angry: { type: 'noul', instructions: 'Is the customer angry?' },
  urgency: { type: 'score', instructions: 'How urgent is it?', criteria: ['not urgent', 'soon', 'at once'] },
}
// The fixtures' temperatures (test/helpers/realistic-models.ts), by llama.cpp's buckets: openjev's choice.3_5, then
// its plain `choice` (a string in the file) for two options, noul, score.3_5; lev's choice.small, noul, none for a score.
const TEMPERATURES = {
  openjev: { route: 1.5, pair: 1.25, angry: 0.75, urgency: 2 },
  lev: { route: 1.75, pair: 1.75, angry: 0.5, urgency: 1 },
  // d1's: choice.3_5, none for a 2-way choice, noul, and the plain `score` for a 3-level score.
  d1: { route: 1.5, pair: 1, angry: 0.75, urgency: 1.25 },
}

function close (t: Test, got: number[], want: number[], what: string): void {
  t.equal(got.length, want.length, `${what}: as many probabilities as options`)
  const worst = Math.max(...got.map((g, i) => Math.abs(g - want[i]!)))
  t.ok(worst <= 1e-4, `${what}: within 1e-4 of the reference (off by ${worst.toExponential(2)})`)
}

const DECISION_TYPE = { openjev: 'openjev', lev: 'lev', d1: 'lfm2-d1' } as const

for (const type of ['openjev', 'lev', 'd1'] as const) {
  t.test(`${DECISION_TYPE[type]}: answers equal llama.cpp's computation from llama-server's own label logits`, async (t) => {
    const { url } = await served()
    const res = await post(`${url}/v1/systemone`, { model: `acme/${type}`, state: STATE, questions: QUESTIONS })
    t.equal(res.status, 200)
    const body = await res.json() as any
    t.same(Object.keys(body), ['model', 'answers', 'usage'], 'exactly {model, answers, usage}')
    t.equal(body.model, `acme/${type}`)
    t.same(Object.keys(body.answers), Object.keys(QUESTIONS), 'answers under the questions\' ids, in their order')
    const { route, pair, angry, urgency } = body.answers
    t.same(Object.keys(route), ['type', 'choice', 'probabilities', 'confidence'], 'a choice\'s keys in llama.cpp\'s order')
    t.same(Object.keys(angry), ['type', 'noul'], 'a noul is P(true) alone')
    t.same(Object.keys(urgency), ['type', 'score', 'legend', 'probabilities', 'confidence'], 'a score\'s keys')
    t.same(Object.keys(route.probabilities), ['refunds', 'shipping', 'sales'], 'the options in the order sent')
    t.same(urgency.legend, { 0: 'not urgent', 1: 'soon', 2: 'at once' }, 'the legend: each level\'s description')

    const file = await realisticModel(type)
    const want = await referenceProbabilities(file, DECISION_TYPE[type], STATE, QUESTIONS, TEMPERATURES[type])
    close(t, Object.values(route.probabilities), want.route!, 'a 3-way choice')
    close(t, Object.values(pair.probabilities), want.pair!, 'a 2-way choice (another bucket)')
    close(t, Object.values(urgency.probabilities), want.urgency!, 'a score')
    const yes = type === 'lev' ? want.angry![1]! : want.angry![0]!
    t.ok(Math.abs(angry.noul - yes) <= 1e-4, `a noul: ${type === 'lev' ? 'Σ p_i·i/8 over nine ratings' : 'P(true)'} within 1e-4`)
    for (const [id, answer] of Object.entries({ route, pair, urgency }) as Array<[string, any]>) {
      const p = Object.values(answer.probabilities) as number[]
      t.ok(Math.abs(p.reduce((a, b) => a + b, 0) - 1) < 1e-9, `${id}: sums to 1`)
    }
    const rp = Object.values(route.probabilities) as number[]
    t.equal(route.choice, Object.keys(route.probabilities)[rp.indexOf(Math.max(...rp))], 'the choice is the most probable key')
    t.ok(Math.abs(route.confidence - Math.max(0, (Math.max(...rp) - 1 / 3) / (1 - 1 / 3))) < 1e-12, 'choice confidence: (p_max - 1/N) / (1 - 1/N)')
    const up = Object.values(urgency.probabilities) as number[]
    t.ok(Math.abs(urgency.score - up.reduce((s, p, i) => s + i * p, 0)) < 1e-12, 'score: Σ i·p_i')
    const mode = up.indexOf(Math.max(...up))
    const spread = up.reduce((s, p, i) => s + p * Math.abs(i - mode), 0) / ((1 + 0 + 1) / 3)
    t.ok(Math.abs(urgency.confidence - Math.min(1, Math.max(0, 1 - spread))) < 1e-12, 'score confidence: 1 - E|i - mode| / its uniform value')
    t.ok(body.usage.input_tokens > 0 && body.usage.output_tokens === 0, 'usage: prompt tokens, no output')

    const again = await (await post(`${url}/v1/systemone`, { model: `acme/${type}`, state: STATE, questions: QUESTIONS })).json() as any
    t.same(again.answers, body.answers, 'the same request twice: the same answers, whatever the cache held')
    t.equal(again.usage.input_tokens, body.usage.input_tokens, 'usage describes the request, not the cache')
  })
}

t.test('lfm2-d1 takes a null state (images alone, as llama.cpp\'s d1 does); the other types refuse it', async (t) => {
  const { url } = await served()
  const d1 = await post(`${url}/v1/systemone`, { model: 'acme/d1', state: null, questions: { angry: QUESTIONS.angry } })
  const body = await d1.json() as any
  t.equal(d1.status, 200, JSON.stringify(body))
  t.type(body.answers.angry.noul, 'number')
  const openjev = await post(`${url}/v1/systemone`, { model: 'acme/openjev', state: null, questions: { angry: QUESTIONS.angry } })
  t.equal(openjev.status, 422)
  t.match(await openjev.json(), { error: { message: '"state" must be provided' } })
})

t.test('four questions evaluate the state once: the others read only their tails (llama-server\'s timings)', async (t) => {
  const { app } = await served()
  const state = `Ticket ${Date.now()}: ${'the parcel was left at the wrong door and then taken back to the depot. '.repeat(8)}`
  const questions = ['refund', 'escalate', 'reply', 'close'].map((id) => ({ id, type: 'noul' as const, instructions: `Should we ${id}?`, options: [{ key: 'true', description: null }, { key: 'false', description: null }] }))
  const run = await app.decisions.decide({ model: 'acme/openjev', signal: new AbortController().signal, ask: { state, questions } }, app.decisions.makerFor('acme/openjev'))
  t.equal(run.tasks, 4)
  const total = run.promptTokens.reduce((a, b) => a + b, 0)
  const shared = (total - run.inputTokens) / 3
  t.ok(shared > 100, `the four prompts share the state's ${shared} tokens, counted once in usage (${run.inputTokens} of ${total})`)
  t.ok(run.evaluatedTokens <= run.inputTokens, `llama-server evaluated ${run.evaluatedTokens} prompt tokens, not the ${total} of four whole prompts`)
})

t.test('a chat model answers too, from its own chat template (uncalibrated)', async (t) => {
  const { url } = await served()
  const body = await (await post(`${url}/v1/systemone`, { model: 'acme/chat', state: 'The parcel never came.', questions: QUESTIONS })).json() as any
  t.same(Object.keys(body.answers), Object.keys(QUESTIONS))
  const p = Object.values(body.answers.route.probabilities) as number[]
  t.ok(Math.abs(p.reduce((a, b) => a + b, 0) - 1) < 1e-9 && p.every((x) => x >= 0 && x <= 1), 'a distribution over the options')
  t.ok(body.answers.angry.noul >= 0 && body.answers.angry.noul <= 1, 'a noul between 0 and 1')
})
