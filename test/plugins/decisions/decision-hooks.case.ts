import t from 'tap'
import type { CallOutcome, CallRequest } from '../../../core/platform/call-hooks.js'
import { ForbiddenError } from '../../../core/base/errors.js'
import { post, serveRealisticModels, sharedServer } from '../../helpers/inference.js'

// The plugins' call hooks on decisions, as on a chat: `before` sees the state (text as `prompt`, a conversation as
// `messages`) and the questions (`options.questions`), and may change them, route the call or refuse it; `alongside`
// may cancel it; `after` is told the answers and tokens; `failure` a failure. A plugin's own app.decisions.ask is not
// hooked (a guardrail asking must not be judged by itself).

const outcomes: CallOutcome[] = []
const failures: Array<{ error: unknown, request: Readonly<CallRequest> }> = []
const seen: CallRequest[] = []

const served = sharedServer(async () => {
  const server = await serveRealisticModels(t, { 'acme/openjev': 'openjev', 'acme/lev': 'lev' })
  const text = (request: CallRequest): string => JSON.stringify([request.prompt, request.messages])
  server.app.callHooks.add({
    name: 'test-hooks',
    before (request) {
      seen.push(structuredClone({ ...request, grant: null }))
      if (text(request).includes('HOOK-REFUSE')) throw new ForbiddenError('the test hook refused it')
      if (text(request).includes('ROUTE')) request.model = 'acme/lev'
      if (text(request).includes('ONLY-ANGRY')) {
        const questions = request.options.questions as Record<string, unknown>
        request.options.questions = { angry: questions.angry }
      }
      if (text(request).includes('REWRITE') && typeof request.prompt === 'string') request.prompt = request.prompt.replace('REWRITE', 'rewritten')
    },
    alongside (request) {
      if (text(request).includes('ALONG-REFUSE')) return Promise.reject(new ForbiddenError('the moderation refused it'))
    },
    after (outcome) { outcomes.push(outcome) },
    failure (error, request) { failures.push({ error, request }) },
  })
  return server
})

const QUESTIONS = { angry: { type: 'noul', instructions: 'Is the customer angry?' }, team: { type: 'choice', instructions: 'Which team?', criteria: { refunds: null, shipping: null } } }

t.test('/v1/systemone: before hooks see the state and questions; after hooks the answers and tokens', async (t) => {
  const { url } = await served()
  seen.length = 0
  outcomes.length = 0
  const res = await post(`${url}/v1/systemone`, { model: 'acme/openjev', state: 'My parcel never came.', questions: QUESTIONS })
  const body = await res.json() as any
  t.equal(res.status, 200, JSON.stringify(body))
  t.match(seen.at(-1), { surface: 'decisions', route: '/v1/systemone', model: 'acme/openjev', prompt: 'My parcel never came.', options: { questions: QUESTIONS } })
  t.equal(outcomes.length, 1)
  t.match(outcomes[0], { text: JSON.stringify(body.answers), usage: { promptTokens: body.usage.input_tokens, completionTokens: 0 }, streamed: false, cut: false })
  t.equal(outcomes[0]!.request.model, 'acme/openjev')
  // A conversation as the state: the hooks see it as messages.
  const chat = await post(`${url}/v1/systemone`, { model: 'acme/openjev', state: [{ role: 'user', content: 'Where is it?' }], questions: QUESTIONS })
  t.equal(chat.status, 200)
  t.match(seen.at(-1), { messages: [{ role: 'user', content: 'Where is it?' }] })
  t.notOk('prompt' in seen.at(-1)!, 'no prompt beside the messages')
})

t.test('before hooks change what is asked: the questions, the state, the model', async (t) => {
  const { url } = await served()
  const only = await (await post(`${url}/v1/systemone`, { model: 'acme/openjev', state: 'ONLY-ANGRY: where is it?', questions: QUESTIONS })).json() as any
  t.same(Object.keys(only.answers), ['angry'], 'the hook left one question')
  const routed = await (await post(`${url}/v1/systemone`, { model: 'acme/openjev', state: 'ROUTE me', questions: QUESTIONS })).json() as any
  t.equal(routed.model, 'acme/lev', 'answered by the model the hook named')
  const direct = await (await post(`${url}/v1/systemone`, { model: 'acme/openjev', state: 'a rewritten state', questions: QUESTIONS })).json() as any
  const rewritten = await (await post(`${url}/v1/systemone`, { model: 'acme/openjev', state: 'a REWRITE state', questions: QUESTIONS })).json() as any
  t.same(rewritten.answers, direct.answers, 'the state the hook wrote is the one asked')
  const openai = await post(`${url}/v1/decisions`, { model: 'acme/openjev', input: 'ROUTE this', questions: [{ type: 'predicate', name: 'late', instructions: 'Is it late?' }] })
  const decided = await openai.json() as any
  t.equal(openai.status, 200, JSON.stringify(decided))
  t.equal(decided.model, 'acme/lev', '/v1/decisions: routed too')
  t.match(seen.at(-1), { route: '/v1/decisions', prompt: 'ROUTE this', options: { questions: [{ name: 'late' }] } })
})

t.test('refusals: a before or alongside hook refuses in the surface\'s shape; failure hooks are told', async (t) => {
  const { url } = await served()
  failures.length = 0
  const refused = await post(`${url}/v1/systemone`, { model: 'acme/openjev', state: 'HOOK-REFUSE this', questions: QUESTIONS })
  t.equal(refused.status, 403)
  t.match(await refused.json(), { error: { code: 403, message: 'the test hook refused it' } }, 'llama-server\'s shape')
  const along = await post(`${url}/v1/decisions`, { model: 'acme/openjev', input: 'ALONG-REFUSE this', questions: [{ type: 'predicate', instructions: 'Late?' }] })
  t.equal(along.status, 403)
  t.match(await along.json(), { error: { message: 'the moderation refused it', type: 'invalid_request_error' } }, 'OpenAI\'s shape')
  t.equal(failures.length, 2, 'each failure told')
  t.match(failures.map((f) => (f.error as Error).message), ['the test hook refused it', 'the moderation refused it'])
})

t.test('a plugin\'s own app.decisions.ask is not hooked', async (t) => {
  const { app } = await served()
  seen.length = 0
  outcomes.length = 0
  const answer = await app.decisions.ask({ model: 'acme/openjev', request: { state: 'HOOK-REFUSE? no: a plugin asks', questions: QUESTIONS }, signal: new AbortController().signal })
  t.same(Object.keys(answer.answers), ['angry', 'team'])
  t.equal(seen.length, 0, 'no before hook saw it')
  t.equal(outcomes.length, 0, 'no after hook either')
})
