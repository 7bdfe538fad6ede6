import t from 'tap'
import { post, serveRealisticModels, sharedServer } from '../../helpers/inference.js'

const served = sharedServer(() => serveRealisticModels(t, { 'acme/openjev': 'openjev', 'acme/bert': 'bert' }, { default_options: { num_ctx: 512 } }))

const NOUL = { type: 'noul', instructions: 'Is it late?' }
const ok = (over: Record<string, unknown>): Record<string, unknown> => ({ model: 'acme/openjev', state: 'The parcel is late.', questions: { late: NOUL }, ...over })
const deep = (n: number): unknown => n === 0 ? 'x' : [deep(n - 1)]
const letters = (n: number): Record<string, null> => Object.fromEntries(Array.from({ length: n }, (_, i) => [`option${i}`, null]))

t.test('every rule of a /v1/systemone request: llama.cpp\'s status, type and words, in its error shape', async (t) => {
  const { url } = await served()
  const cases: Array<[string, Record<string, unknown> | string, number, string, RegExp]> = [
    ['a body that is not JSON', '{"model": ', 400, 'invalid_request_error', /JSON/i],
    ['no questions', ok({ questions: undefined }), 422, 'unprocessable_entity_error', /^"questions" must be a non-empty object$/],
    ['empty questions', ok({ questions: {} }), 422, 'unprocessable_entity_error', /^"questions" must be a non-empty object$/],
    ['questions as a list', ok({ questions: [NOUL] }), 422, 'unprocessable_entity_error', /"questions" must be a non-empty object/],
    ['4097 questions', ok({ questions: Object.fromEntries(Array.from({ length: 4097 }, (_, i) => [`q${i}`, NOUL])) }), 413, 'request_too_large_error', /^The request has 4097 questions, the maximum is 4096$/],
    ['an empty question id', ok({ questions: { '': NOUL } }), 422, 'unprocessable_entity_error', /^"questions" has an empty question id$/],
    ['a question that is not an object', ok({ questions: { late: 'yes' } }), 422, 'unprocessable_entity_error', /^questions\.late: must be an object$/],
    ['no instructions', ok({ questions: { late: { type: 'noul' } } }), 422, 'unprocessable_entity_error', /^questions\.late: "instructions" must be a non-empty string, object, or array$/],
    ['empty instructions', ok({ questions: { late: { type: 'noul', instructions: '' } } }), 422, 'unprocessable_entity_error', /"instructions" must be a non-empty/],
    ['null instructions (the TypeSafe SDK\'s noul() default)', ok({ questions: { late: { type: 'noul', instructions: null } } }), 422, 'unprocessable_entity_error', /"instructions" must be a non-empty/],
    ['an unknown type', ok({ questions: { late: { type: 'maybe', instructions: 'x' } } }), 422, 'unprocessable_entity_error', /^questions\.late: "type" must be one of: choice, score, noul$/],
    ['a choice without criteria', ok({ questions: { c: { type: 'choice', instructions: 'x' } } }), 422, 'unprocessable_entity_error', /^questions\.c: "criteria" must be a non-empty object$/],
    ['a choice of 53 on openjev\'s 52 letters', ok({ questions: { c: { type: 'choice', instructions: 'x', criteria: letters(53) } } }), 422, 'unprocessable_entity_error', /^questions\.c: "criteria" has 53 options, at most 52 are supported$/],
    ['a score of one level', ok({ questions: { s: { type: 'score', instructions: 'x', criteria: ['low'] } } }), 422, 'unprocessable_entity_error', /^questions\.s: "criteria" must be an array of 2 to 10 levels$/],
    ['a score of eleven levels', ok({ questions: { s: { type: 'score', instructions: 'x', criteria: Array(11).fill('l') } } }), 422, 'unprocessable_entity_error', /2 to 10 levels/],
    ['a noul with a list of criteria', ok({ questions: { late: { ...NOUL, criteria: ['yes'] } } }), 422, 'unprocessable_entity_error', /^questions\.late: "criteria" must be an object$/],
    ['no state', ok({ state: undefined }), 422, 'unprocessable_entity_error', /^"state" must be provided$/],
    ['a null state', ok({ state: null }), 422, 'unprocessable_entity_error', /^"state" must be provided$/],
    ['a state nested 40 deep', ok({ state: deep(40) }), 422, 'unprocessable_entity_error', /^"state" is nested too deeply$/],
    ['images that are not a list', ok({ images: 'data:image/png;base64,AA==' }), 422, 'unprocessable_entity_error', /^"images" must be an array$/],
    ['an image by address', ok({ images: ['https://example.com/a.png'] }), 422, 'unprocessable_entity_error', /data URLs/],
    ['nine images', ok({ images: Array(9).fill('data:image/png;base64,AA==') }), 422, 'unprocessable_entity_error', /^"images" holds 9, the maximum is 8$/],
    ['videos', ok({ videos: ['data:video/mp4;base64,AA=='] }), 422, 'unprocessable_entity_error', /^"videos" is not supported$/],
    ['an image with a text-only decision', ok({ images: ['data:image/png;base64,AA=='] }), 501, 'not_supported_error', /does not support image input/],
    ['an embedding model', ok({ model: 'acme/bert' }), 501, 'not_supported_error', /^This model is not a decision model$/],
    ['an unknown model', ok({ model: 'acme/nope' }), 404, 'not_found_error', /not found/],
    ['a prompt longer than the context', ok({ state: 'word '.repeat(1200) }), 400, 'exceed_context_size_error', /^request \(\d+ tokens\) exceeds the available context size \(512 tokens\)/],
  ]
  for (const [what, body, status, type, message] of cases) {
    const res = typeof body === 'string'
      ? await fetch(`${url}/v1/systemone`, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
      : await post(`${url}/v1/systemone`, body)
    const answer = await res.json() as any
    t.equal(res.status, status, `${what}: ${status}`)
    t.same(Object.keys(answer), ['error'], `${what}: one "error"`)
    t.same(Object.keys(answer.error ?? {}).sort(), ['code', 'message', 'type'], `${what}: {code, message, type}`)
    t.equal(answer.error?.code, status, `${what}: code is the status`)
    t.equal(answer.error?.type, type, `${what}: ${type}`)
    t.match(answer.error?.message, message, `${what}: says why`)
  }
})

t.test('a decision model on the chat surfaces is refused, saying where to ask it', async (t) => {
  const { url } = await served()
  const chat = await post(`${url}/api/chat`, { model: 'acme/openjev', messages: [{ role: 'user', content: 'hi' }], stream: false })
  t.equal(chat.status, 400)
  t.match(await chat.json(), { error: /"acme\/openjev" does not support chat or generate: it is a decision model; ask it questions at \/v1\/systemone or \/v1\/decisions/ })
  const openai = await post(`${url}/v1/chat/completions`, { model: 'acme/openjev', messages: [{ role: 'user', content: 'hi' }] })
  t.equal(openai.status, 400)
  t.match(await openai.json(), { error: { message: /it is a decision model/, type: 'invalid_request_error' } })
  const embed = await post(`${url}/v1/embeddings`, { model: 'acme/openjev', input: 'hi' })
  t.equal(embed.status, 400, 'nor does it embed')
})

t.test('a decision model is listed with its capability: /api/show, /api/tags, /v1/models (data and models)', async (t) => {
  const { url } = await served()
  const shown = await (await post(`${url}/api/show`, { model: 'acme/openjev' })).json() as any
  t.same(shown.capabilities, ['decision'], '/api/show: decision, not completion')
  const tags = await (await fetch(`${url}/api/tags`)).json() as any
  t.same(tags.models.find((m: any) => m.name === 'acme/openjev').capabilities, ['decision'], '/api/tags')
  t.same(tags.models.find((m: any) => m.name === 'acme/bert').capabilities, ['embedding'])
  const v1 = await (await fetch(`${url}/v1/models`)).json() as any
  t.same(v1.data.find((m: any) => m.id === 'acme/openjev').architecture, { input_modalities: ['text'], output_modalities: ['decisions'] }, 'llama-server\'s mark of a decision model')
  t.match(v1.models.find((m: any) => m.name === 'acme/openjev'), { description: 'openjev decision model', release_date: /^\d{4}-\d\d-\d\d$/, capabilities: ['decision'] })
})

t.test('a request of a thousand questions is refused for its prompt tokens (413) before it renders them all', async (t) => {
  const { url } = await served()
  const questions = Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`q${i}`, NOUL]))
  const res = await post(`${url}/v1/systemone`, ok({ questions }))
  t.equal(res.status, 413)
  t.match(await res.json(), { error: { code: 413, type: 'request_too_large_error', message: /^The request renders \d+ prompt tokens, the maximum is 4096\./ } }, 'llama.cpp\'s budget: 8 contexts of 512')
})
