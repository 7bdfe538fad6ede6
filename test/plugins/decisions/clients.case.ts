import { execFile } from 'node:child_process'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import { choice, noul, score, TypeSafeClient, UnprocessableEntityError } from '@typesafe-ai/sdk'
import { Ollama } from 'ollama'
import t from 'tap'
import { tempDir } from '../../helpers/app.js'
import { serveRealisticModels, sharedServer } from '../../helpers/inference.js'
import { agentCommand } from '../../../scripts/agents/test-agents.js'

const served = sharedServer(() => serveRealisticModels(t, { 'acme/openjev': 'openjev', 'acme/chat': 'qwen25' }))

const QUESTIONS = {
  route: { type: 'choice' as const, instructions: 'Which team?', criteria: { refunds: 'money back', shipping: null } },
  angry: { type: 'noul' as const, instructions: 'Is the customer angry?' },
  urgency: { type: 'score' as const, instructions: 'How urgent?', criteria: ['low', 'high'] },
}

t.test('ollama\'s systemone(), unconfigured beyond the host', async (t) => {
  const { url } = await served()
  const ollama = new Ollama({ host: url })
  const answer = await ollama.systemone({ model: 'acme/openjev', state: 'My parcel never came!', questions: QUESTIONS })
  t.equal(answer.model, 'acme/openjev')
  t.same(Object.keys(answer.answers), ['route', 'angry', 'urgency'])
  t.match(answer.answers.route, { type: 'choice', choice: /^(refunds|shipping)$/, probabilities: { refunds: Number, shipping: Number }, confidence: Number })
  t.match(answer.answers.angry, { type: 'noul', noul: Number })
  t.match(answer.answers.urgency, { type: 'score', score: Number, legend: { 0: 'low', 1: 'high' } })
  t.ok(answer.usage.input_tokens > 0)
})

t.test('@typesafe-ai/sdk: systemOne() and its model list', async (t) => {
  const { url } = await served()
  const client = new TypeSafeClient({ apiKey: 'unused', baseURL: url })
  const models = await client.models.list()
  const names = (Array.isArray(models) ? models : (models as { models: Array<{ name: string }> }).models).map((m: { name: string }) => m.name)
  t.ok(names.includes('acme/openjev'), 'the decision model is listed in `models`, as the SDK requires')
  const answer = await client.systemOne({
    model: 'acme/openjev',
    state: { ticket: 'late parcel', plan: 'pro' },
    questions: { route: choice('Which team?', { refunds: 'money back', shipping: null }), angry: noul('Is the customer angry?'), urgency: score('How urgent?', ['low', 'high']) },
  })
  const p = Object.values(answer.answers.route.probabilities)
  t.equal(p.length, 2)
  t.ok(Math.abs(p[0]! + p[1]! - 1) < 1e-9, 'a distribution')
  t.match(answer.answers.angry, { type: 'noul', noul: Number })
  t.match(answer.answers.urgency, { type: 'score', legend: { 0: 'low', 1: 'high' } })
  const refused = await client.systemOne({ model: 'acme/openjev', state: 'x', questions: { a: noul() } }).then(() => null, (err: unknown) => err)
  t.ok(refused instanceof UnprocessableEntityError, 'noul() without instructions (null): the 422, read by the SDK')
  t.match((refused as Error).message, /"instructions" must be a non-empty/)
})

t.test('openai\'s decisions.create(), on Node 22 as the SDK asks: typed choices kept, a refusal where it cannot answer', async (t) => {
  const { url } = await served()
  const [node, entry] = await agentCommand('openai-decisions')
  const dir = await tempDir(t, 'llamagate-openai-decisions-')
  const script = join(dir, 'decide.mjs')
  await writeFile(script, `import OpenAI from ${JSON.stringify(pathToFileURL(entry).href)}
const client = new OpenAI({ apiKey: 'unused', baseURL: process.argv[2] + '/v1' })
const decision = await client.decisions.create({
  model: 'acme/openjev',
  input: [{ role: 'user', content: [{ type: 'input_text', text: 'My parcel never came.' }, { type: 'input_json', data: { order: 4471 } }] }],
  questions: [
    { type: 'predicate', name: 'angry', instructions: 'Is the customer angry?' },
    { type: 'choice', name: 'refund', instructions: 'Refund?', choices: [{ value: true, description: 'yes' }, { value: 'later' }] },
    { type: 'score', instructions: 'How urgent?', levels: [{ label: 'low' }, { label: 'mid' }, { label: 'high', description: 'at once' }] },
    { type: 'choice', name: 'many', instructions: 'Which?', choices: Array.from({ length: 60 }, (_, i) => ({ value: 'c' + i })) },
  ],
})
process.stdout.write(JSON.stringify(decision))
`)
  const { stdout } = await promisify(execFile)(node, [script, url], { env: { PATH: process.env.PATH, HOME: dir } })
  const decision = JSON.parse(stdout)
  t.equal(decision.model, 'acme/openjev')
  const [angry, refund, urgency, many] = decision.answers
  t.match(angry, { type: 'predicate', name: 'angry', probability: Number })
  t.match(refund, { type: 'choice', name: 'refund', confidence: Number })
  t.same(refund.probabilities.map((p: { value: unknown }) => p.value), [true, 'later'], 'typed choice values kept: true is not "true"')
  t.ok([true, 'later'].includes(refund.choice))
  t.match(urgency, { type: 'score', name: null, score: Number, confidence: Number })
  t.same(urgency.probabilities.map((p: { value: number, label: string }) => [p.value, p.label]), [[0, 'low'], [1, 'mid'], [2, 'high']])
  t.same(many, { type: 'refusal', name: 'many' }, '60 choices, past openjev\'s 52 letters: refused, not a failed request')
  t.ok(decision.usage.input_tokens > 0 && decision.usage.total_tokens === decision.usage.input_tokens && decision.usage.output_tokens === 0)
})
