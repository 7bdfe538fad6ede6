import t from 'tap'
import { ResponseStore, type StoredResponse } from '../../../plugins/openai-api/response-store.js'

function stored (id: string, model = 'acme/a', text = 'x'): StoredResponse {
  const output = [{ id: `msg_${id}`, type: 'message', role: 'assistant', content: [{ type: 'output_text', text }] }]
  return { response: { id, output }, model, conversation: [{ type: 'message', role: 'user', content: 'hi' }, ...output] }
}

t.test('least recently used dropped first past the count', async (t) => {
  const store = new ResponseStore({ maxResponses: 2 })
  store.put(stored('a'))
  store.put(stored('b'))
  t.ok(store.get('a'), 'a read: now the most recent')
  store.put(stored('c'))
  t.equal(store.size, 2)
  t.equal(store.get('b'), null, 'b, the least recently used, dropped')
  t.ok(store.get('a'))
  t.ok(store.get('c'))
  t.equal(store.item('msg_b', 'acme/a'), null, 'its items with it')
  t.same(store.item('msg_c', 'acme/a'), stored('c').response.output[0], 'an output item found by its id')
})

t.test('the byte budget: old ones dropped to make room; one larger than the budget alone is not kept', async (t) => {
  const one = Buffer.byteLength(JSON.stringify(stored('a').conversation)) + Buffer.byteLength(JSON.stringify(stored('a').response))
  const store = new ResponseStore({ maxBytes: one * 2 + 10 })
  store.put(stored('a'))
  store.put(stored('b'))
  t.equal(store.totalBytes, one * 2)
  store.put(stored('c'))
  t.equal(store.size, 2, 'a dropped for c')
  t.equal(store.get('a'), null)
  t.equal(store.put(stored('d', 'acme/a', 'y'.repeat(one * 3))), false, 'too large: refused')
  t.equal(store.size, 2, 'and nothing dropped for it')
  t.ok(store.delete('b'))
  t.notOk(store.delete('b'), 'deleted once')
  t.equal(store.totalBytes, one)
})

t.test('per model: a response is found only with the model that answered it', async (t) => {
  const store = new ResponseStore()
  store.put(stored('a', 'acme/one'))
  t.ok(store.get('a', 'acme/one'))
  t.equal(store.get('a', 'acme/two'), null)
  t.equal(store.item('msg_a', 'acme/two'), null)
  t.ok(store.get('a'), 'any model when none is named (GET /v1/responses/{id})')
  store.put(stored('a', 'acme/two'))
  t.equal(store.size, 1, 'the same id again replaces it')
  t.equal(store.get('a', 'acme/one'), null)
})
