// Schema bombs: a `format` enum of 50,000 values wedged a model for minutes, 5,000 held it
// 24 s. Every output constraint a request carries is held to limits.schema_size and limits.schema_alternatives
// before a slot is taken, on every surface.
import t from 'tap'
import { checkSchemaBudget } from '../../../plugins/inference/schema-budget.js'
import { serveTinyModels } from '../../helpers/inference.js'
import { usualMs, withinUsualTime } from '../../helpers/usual-time.js'

const MODEL = 'acme/tiny'
const MESSAGES = [{ role: 'user', content: 'hi' }]
const BUDGET = { schemaBytes: 64 * 1024, schemaAlternatives: 1024 }

/** A string schema with `count` enum values of about 35 bytes each (the attack's shape). */
function enumSchema (count: number): Record<string, unknown> {
  return { type: 'string', enum: Array.from({ length: count }, (_, i) => `value-${i}-xxxxxxxxxxxxxxxxxxxx`) }
}

async function post (url: string, body: unknown): Promise<{ status: number, json: any, ms: number }> {
  const started = Date.now()
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  return { status: res.status, json: await res.json(), ms: Date.now() - started }
}

t.test('each constraint is measured: its bytes and its alternatives, named in the refusal', async (t) => {
  t.doesNotThrow(() => checkSchemaBudget({ response_format: { type: 'json_schema', json_schema: { schema: enumSchema(1024) } } }, BUDGET), '1,024 values, 37 KiB: within')
  t.throws(() => checkSchemaBudget({ response_format: { type: 'json_schema', json_schema: { schema: enumSchema(1025) } } }, BUDGET),
    { statusCode: 400, code: 'schema_too_large', message: 'the response format\'s schema lists 1025 alternatives (enum values and consts): at most 1024 (limits.schema_alternatives)' })
  t.throws(() => checkSchemaBudget({ json_schema: enumSchema(5000) }, BUDGET), { message: /^json_schema is 1\d\d KiB: at most 64 KiB may be sent \(limits\.schema_size\)$/ })
  t.throws(() => checkSchemaBudget({ grammar: `root ::= ${'"x" | '.repeat(20_000)}"y"` }, BUDGET), { message: /^the grammar is \d+ KiB: at most 64 KiB/ })
  const consts = { anyOf: Array.from({ length: 1100 }, (_, i) => ({ const: i })) }
  t.throws(() => checkSchemaBudget({ tools: [{ type: 'function', function: { name: 'pick', parameters: { type: 'object', properties: { n: consts } } } }] }, BUDGET),
    { message: 'the schema of tool "pick" lists 1100 alternatives (enum values and consts): at most 1024 (limits.schema_alternatives)' })
  t.throws(() => checkSchemaBudget({ tools: [{ name: 'look', input_schema: { type: 'object', properties: { q: enumSchema(2000) } } }] }, BUDGET), { message: /^the schema of tool "look" is \d+ KiB/ }, 'Anthropic\'s input_schema')
  t.doesNotThrow(() => checkSchemaBudget({ tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }], response_format: { type: 'json_object' } }, BUDGET), 'ordinary tools and JSON mode')
})

t.test('a schema bomb on each surface: 400 before any slot, and the model answers the next client at once', async (t) => {
  const { url } = await serveTinyModels(t, [MODEL])
  const bomb = enumSchema(50_000)
  const attacks: Array<[string, Record<string, unknown>, (json: any) => string]> = [
    ['/api/chat', { model: MODEL, messages: MESSAGES, stream: false, format: bomb }, (json) => json.error],
    ['/api/generate', { model: MODEL, prompt: 'hi', stream: false, format: bomb }, (json) => json.error],
    ['/v1/chat/completions', { model: MODEL, messages: MESSAGES, response_format: { type: 'json_schema', json_schema: { name: 'x', schema: bomb } } }, (json) => json.error.message],
    ['/v1/chat/completions', { model: MODEL, messages: MESSAGES, tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: { a: bomb } } } }], tool_choice: 'required' }, (json) => json.error.message],
    ['/v1/messages', { model: MODEL, messages: MESSAGES, max_tokens: 4, tools: [{ name: 'f', input_schema: { type: 'object', properties: { a: bomb } } }] }, (json) => json.error.message],
    ['/v1/responses', { model: MODEL, input: 'hi', text: { format: { type: 'json_schema', name: 'x', schema: bomb } } }, (json) => json.error.message],
  ]
  const normalChat = (): ReturnType<typeof post> => post(`${url}/api/chat`, { model: MODEL, messages: MESSAGES, stream: false, options: { num_predict: 4 } })
  const usual = await usualMs(normalChat)
  // The attacks all at once, and a normal client's request among them.
  const [normal, ...refused] = await Promise.all([
    normalChat(),
    ...attacks.map(([path, body]) => post(`${url}${path}`, body)),
  ])
  for (const [i, [path, , message]] of attacks.entries()) {
    t.equal(refused[i]!.status, 400, `${path}: 400`)
    t.match(message(refused[i]!.json), /is \d+ KiB: at most 64 KiB may be sent \(limits\.schema_size\)/, `${path}: says which limit`)
  }
  t.equal(normal!.status, 200, 'the normal request among them is answered')
  t.equal(normal!.json.eval_count, 4)
  withinUsualTime(t, 'the normal request', normal!.ms, usual)
  const ps = await (await fetch(`${url}/api/ps`)).json() as { models: Array<{ name: string, active_requests: number, queued_requests: number }> }
  t.match(ps.models.find((m) => m.name === MODEL), { active_requests: 0, queued_requests: 0 }, 'no slot held')
})
