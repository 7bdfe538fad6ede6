import t from 'tap'
import { inputItems, responsesToChat } from '../../../plugins/openai-api/responses-to-chat.js'

// The translation of Responses requests into chat requests for llama-server, with the shapes Codex sends
// (test/fixtures/agents/codex) and those of the OpenAI and AI SDKs.

t.test('instructions and leading developer/system messages: one system message; developer later is system', async (t) => {
  const chat = responsesToChat({ instructions: 'be brief' }, [], [
    { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'rules' }, { type: 'input_text', text: 'more' }] },
    { type: 'message', role: 'system', content: 'sys' },
    { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'hi' }] },
    { role: 'developer', content: 'late' },
    { content: 'no role: the user' },
  ])
  t.same(chat.messages, [
    { role: 'system', content: 'be brief\n\nrules\nmore\n\nsys' },
    { role: 'user', content: [{ type: 'text', text: 'hi' }] },
    { role: 'system', content: 'late' },
    { role: 'user', content: 'no role: the user' },
  ])
  t.same(inputItems('hello'), [{ type: 'message', role: 'user', content: 'hello' }], 'a string input is one user message')
})

t.test('Codex\'s second turn: reasoning, text and calls of one answer are one assistant message; outputs are tool messages', async (t) => {
  const chat = responsesToChat({}, [{ role: 'user', content: 'run it' }], [
    { type: 'reasoning', id: 'rs_1', summary: [], content: [{ type: 'reasoning_text', text: 'think' }], encrypted_content: null },
    { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'sure' }] },
    { type: 'function_call', status: 'completed', id: 'fc_1', name: 'exec_command', arguments: '{"cmd":"ls"}', call_id: 'call_1' },
    { type: 'function_call', name: 'view', arguments: { path: 'a' }, call_id: 'call_2' },
    { type: 'function_call_output', id: 'fco_1', call_id: 'call_1', output: 'a\nb\n' },
    { type: 'function_call_output', call_id: 'call_2', output: [{ type: 'input_text', text: 'seen' }] },
    { type: 'web_search_call', id: 'ws_1', status: 'completed' },
    { type: 'reasoning', summary: [{ type: 'summary_text', text: 'summed' }] },
    { type: 'message', role: 'assistant', content: 'done' },
  ])
  t.same(chat.messages, [
    { role: 'user', content: 'run it' },
    {
      role: 'assistant', content: 'sure', reasoning_content: 'think',
      tool_calls: [
        { id: 'call_1', type: 'function', function: { name: 'exec_command', arguments: '{"cmd":"ls"}' } },
        { id: 'call_2', type: 'function', function: { name: 'view', arguments: '{"path":"a"}' } },
      ],
    },
    { role: 'tool', tool_call_id: 'call_1', content: 'a\nb\n' },
    { role: 'tool', tool_call_id: 'call_2', content: [{ type: 'text', text: 'seen' }] },
    { role: 'assistant', content: 'done', reasoning_content: 'summed' },
  ])
})

t.test('tools: functions kept, namespace and web_search dropped; tool_choice as llama-server reads it', async (t) => {
  const user = [{ role: 'user', content: 'hi' }]
  const fn = (name: string) => ({ type: 'function', name, description: `${name} it`, strict: false, parameters: { type: 'object', properties: { a: { type: 'string' } } } })
  const tools = [fn('one'), { type: 'namespace', name: 'multi_agent_v1', tools: [fn('spawn')] }, { type: 'web_search', external_web_access: true }, { type: 'function', name: 'bare' }]
  const chat = responsesToChat({ tools, tool_choice: 'auto', parallel_tool_calls: true }, [], user)
  t.same(chat.tools, [
    { type: 'function', function: { name: 'one', parameters: fn('one').parameters, description: 'one it' } },
    { type: 'function', function: { name: 'bare', parameters: { type: 'object', properties: {} } } },
  ])
  t.equal(chat.tool_choice, 'auto')
  t.equal(chat.parallel_tool_calls, true)
  const named = responsesToChat({ tools, tool_choice: { type: 'function', name: 'bare' } }, [], user)
  t.same(named.tools?.map((x) => (x.function as { name: string }).name), ['bare'], 'a named function: only it, required')
  t.equal(named.tool_choice, 'required')
  t.same(named.forced, { tools: [{ name: 'bare', parameters: { type: 'object', properties: {} } }], parallel: false }, 'a named function forces one call to it')
  t.equal(chat.forced, null, 'auto forces nothing')
  const allowed = responsesToChat({ tools, tool_choice: { type: 'allowed_tools', mode: 'auto', tools: [{ type: 'function', name: 'one' }] } }, [], user)
  t.same(allowed.tools?.map((x) => (x.function as { name: string }).name), ['one'])
  t.equal(allowed.tool_choice, undefined)
  const onlyHosted = responsesToChat({ tools: [tools[2]!], tool_choice: 'required', parallel_tool_calls: false }, [], user)
  t.same(Object.keys(onlyHosted), ['messages', 'forced'], 'no function left: no tools, no choice')
  t.equal(onlyHosted.forced, null, 'and no call forced')
  t.throws(() => responsesToChat({ tools: [{ type: 'function' }] }, [], user), /function tool 0 has no name/)
})

t.test('text.format: json_schema and json_object as response_format', async (t) => {
  const user = [{ role: 'user', content: 'hi' }]
  const schema = { type: 'object', properties: { a: { type: 'string' } } }
  t.same(responsesToChat({ text: { format: { type: 'json_schema', name: 'x', schema, strict: true } } }, [], user).response_format, { type: 'json_schema', json_schema: { name: 'x', schema, strict: true } })
  t.same(responsesToChat({ text: { format: { type: 'json_object' } } }, [], user).response_format, { type: 'json_object' })
  t.equal(responsesToChat({ text: { format: { type: 'text' } } }, [], user).response_format, undefined)
})

t.test('images become image_url parts; what cannot be read is a 400 naming the item', async (t) => {
  const chat = responsesToChat({}, [], [{ role: 'user', content: [{ type: 'input_image', image_url: 'data:image/png;base64,AA', detail: 'auto' }, { type: 'input_text', text: 'what?' }] }])
  t.same(chat.messages[0]?.content, [{ type: 'image_url', image_url: { url: 'data:image/png;base64,AA' } }, { type: 'text', text: 'what?' }])
  const cases: Array<[unknown[], RegExp]> = [
    [[{ role: 'user', content: [{ type: 'input_file', file_id: 'f' }] }], /input item 0 has a content part of type "input_file"/],
    [[{ role: 'user', content: [{ type: 'input_image', file_id: 'f' }] }], /input_image of input item 0 has no image_url/],
    [[{ role: 'user' }], /input item 0 has no content/],
    [[{ role: 'user', content: [5] }], /not an object/],
    [[{ role: 'user', content: [{ type: 'input_text' }] }], /input_text part of input item 0 has no text/],
    [[{ role: 'tool', content: 'x' }], /role "tool"/],
    [[{ role: 'system', content: [{ type: 'input_image', image_url: 'x' }] }], /where only text is read/],
    [[{ role: 'user', content: 'x' }, { type: 'function_call', name: 'f', arguments: '{}' }], /input item 1 \(function_call\) has no call_id/],
    [[{ id: 'x' }], /input item 0 is not a message and has no type/],
    [['x'], /input item 0 is not an object/],
    [[{ role: 'developer', content: 'only rules' }], /no message for the model to answer/],
  ]
  for (const [input, message] of cases) {
    t.throws(() => responsesToChat({}, [], input as never), { statusCode: 400, message }, String(message))
  }
  t.throws(() => responsesToChat({}, [{ role: 'user' }], [{ role: 'user', content: 'x' }]), { message: /item 0 of the earlier conversation/ })
})

t.test('reasoning.effort: the template\'s reasoning_effort, as chat completions sends it; none turns reasoning off there', async (t) => {
  const input = [{ role: 'user', content: 'hi' }]
  t.equal(responsesToChat({ reasoning: { effort: 'low' } }, [], input).reasoning_effort, 'low')
  t.equal(responsesToChat({ reasoning: { effort: 'none' } }, [], input).reasoning_effort, 'none')
  t.notOk('reasoning_effort' in responsesToChat({ reasoning: { effort: null } }, [], input), 'null: the model\'s default')
  t.notOk('reasoning_effort' in responsesToChat({}, [], input))
})
