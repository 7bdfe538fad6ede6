import { Ajv2020 } from 'ajv/dist/2020.js'
import t from 'tap'
import { forcedAnswer, forcedChunks } from '../../../plugins/inference/forced-call.js'
import { ForcedCallDecoder } from '../../../plugins/inference/forced-call-decoder.js'
import { forcedCallFields, forcedCallSchema, type ForcedCall } from '../../../plugins/inference/forced-call-schema.js'

// The pieces that make a forced call of an answer held to a grammar; forced-tool-calls.case.ts (openai-api,
// anthropic-api) runs them on a real model through the official clients.
const CITY = { name: 'city', parameters: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] } }
const NONE = { name: 'none', parameters: {} }

t.test('the schema: one call, name first; a list of one or more when parallel; any object for a tool without one', async (t) => {
  const one = forcedCallSchema({ tools: [CITY], parallel: false }) as { properties: Record<string, unknown>, required: string[] }
  t.same(Object.keys(one.properties), ['name', 'arguments'])
  t.same(one.required, ['name', 'arguments'])
  const many = forcedCallSchema({ tools: [CITY, NONE], parallel: true }) as { type: string, minItems: number, items: { anyOf: Array<{ properties: { arguments: unknown } }> } }
  t.equal(many.type, 'array')
  t.equal(many.minItems, 1)
  t.same(many.items.anyOf[1]!.properties.arguments, { type: 'object' })
  t.same(forcedCallFields({ tools: [CITY], parallel: false }), { tool_choice: 'none', response_format: { type: 'json_schema', json_schema: { name: 'tool_call', schema: one } } })
})

t.test('a schema that refers to its own definitions keeps them, moved to the root: what it accepts is the same', async (t) => {
  const parameters = { type: 'object', $defs: { point: { type: 'object', properties: { x: { type: 'integer' } }, required: ['x'] } }, properties: { at: { $ref: '#/$defs/point' }, again: { $ref: '#/properties/at' } }, required: ['at'] }
  const schema = forcedCallSchema({ tools: [{ name: 'go', parameters }], parallel: false })
  const validate = new Ajv2020({ strict: false }).compile(schema)
  t.ok(validate({ name: 'go', arguments: { at: { x: 1 }, again: { x: 2 } } }))
  t.notOk(validate({ name: 'go', arguments: { at: { x: 'no' } } }), 'the moved definition still holds')
  t.notOk(validate({ name: 'other', arguments: { at: { x: 1 } } }), 'only the tool named')
})

t.test('the decoder: the name as soon as it is written, the arguments as they come, whatever the pieces', async (t) => {
  const text = '```json\n[ {"name": "city", "arguments": {"name": "a \\"}\\" b", "n": [1, {"x": 2}]}}, {"name":"none","arguments":{}} ]\n```'
  const decoder = new ForcedCallDecoder(true)
  const pieces = [...text].flatMap((c) => decoder.push(c))
  t.same(decoder.calls, [{ name: 'city', arguments: '{"name": "a \\"}\\" b", "n": [1, {"x": 2}]}' }, { name: 'none', arguments: '{}' }])
  t.ok(decoder.complete)
  t.same(pieces.filter((p) => p.name !== undefined), [{ index: 0, name: 'city' }, { index: 1, name: 'none' }], 'each name once, in order')
  const whole = new ForcedCallDecoder(false)
  t.same(whole.push('{"name":"city","arguments":{"name":"x"}}'), [{ index: 0, name: 'city', arguments: '{"name":"x"}' }], 'one piece: name and arguments together')
  const cut = new ForcedCallDecoder(false)
  cut.push('{"name":"city","arguments":{"name":"xy')
  t.same(cut.calls, [{ name: 'city', arguments: '{"name":"xy' }], 'cut at the token limit: the arguments as far as they went')
  t.notOk(cut.complete)
})

t.test('chunks and whole answers: the text becomes the calls, `stop` becomes `tool_calls`; reasoning passes', async (t) => {
  const forced: ForcedCall = { tools: [CITY], parallel: false }
  async function * chunks () {
    yield { choices: [{ delta: { reasoning_content: 'hmm' } }] }
    yield { choices: [{ delta: { content: '{"name": "city", "argu' } }] }
    yield { choices: [{ delta: { content: 'ments": {"name": "Lima"}}' } }] }
    yield { choices: [{ delta: {}, finish_reason: 'stop' }] }
  }
  const out = []
  for await (const chunk of forcedChunks(chunks(), forced)) out.push(chunk)
  t.same(out[0], { choices: [{ delta: { reasoning_content: 'hmm' } }] })
  t.same(out[1], { choices: [{ delta: {} }] }, 'the call\'s head not whole yet: nothing to say')
  t.match(out[2], { choices: [{ delta: { tool_calls: [{ index: 0, id: /^call_\w{24}$/, type: 'function', function: { name: 'city', arguments: '{"name": "Lima"}' } }] } }] })
  t.equal((out[3]!.choices[0] as { finish_reason?: string }).finish_reason, 'tool_calls')
  const answer = forcedAnswer({ choices: [{ message: { role: 'assistant', content: '{"name":"city","arguments":{"name":"Lima"}}' }, finish_reason: 'stop' }] }, forced, 'toolu_')
  t.match(answer.choices[0], { finish_reason: 'tool_calls', message: { content: null, tool_calls: [{ id: /^toolu_/, type: 'function', function: { name: 'city', arguments: '{"name":"Lima"}' } }] } })
  const cut = forcedAnswer({ choices: [{ message: { content: '{"na' }, finish_reason: 'length' }] }, forced)
  t.same(cut.choices[0], { message: { content: null }, finish_reason: 'length' }, 'nothing to call: no call, the limit said')
})
