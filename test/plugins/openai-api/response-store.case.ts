import t from 'tap'
import { ResponseStore, type Reach, type StoredResponse } from '../../../plugins/openai-api/response-store.js'

function stored (id: string, model = 'acme/a', text = 'x', owner: string | null = null): StoredResponse {
  const output = [{ id: `msg_${id}`, type: 'message', role: 'assistant', content: [{ type: 'output_text', text }] }]
  return { response: { id, output, created_at: 1700000000, status: 'completed' }, model, owner, conversation: [{ type: 'message', role: 'user', content: 'hi' }, ...output] }
}

// Keys off: every request is the one owner, null.
const anyone: Reach = { owner: null }

t.test('least recently used dropped first past the count', async (t) => {
  const store = new ResponseStore({ maxResponses: 2 })
  store.put(stored('a'))
  store.put(stored('b'))
  t.ok(store.get('a', anyone), 'a read: now the most recent')
  store.put(stored('c'))
  t.equal(store.size, 2)
  t.equal(store.get('b', anyone), null, 'b, the least recently used, dropped')
  t.ok(store.get('a', anyone))
  t.ok(store.get('c', anyone))
  t.equal(store.item('msg_b', null, 'acme/a'), null, 'its items with it')
  t.same(store.item('msg_c', null, 'acme/a'), stored('c').response.output[0], 'an output item found by its id')
})

t.test('the byte budget: old ones dropped to make room; one larger than the budget alone is not kept', async (t) => {
  const one = Buffer.byteLength(JSON.stringify(stored('a').conversation)) + Buffer.byteLength(JSON.stringify(stored('a').response))
  const store = new ResponseStore({ maxBytes: one * 2 + 10 })
  store.put(stored('a'))
  store.put(stored('b'))
  t.equal(store.totalBytes, one * 2)
  store.put(stored('c'))
  t.equal(store.size, 2, 'a dropped for c')
  t.equal(store.get('a', anyone), null)
  t.equal(store.put(stored('d', 'acme/a', 'y'.repeat(one * 3))), false, 'too large: refused')
  t.equal(store.size, 2, 'and nothing dropped for it')
  t.ok(store.delete('b', anyone))
  t.notOk(store.delete('b', anyone), 'deleted once')
  t.equal(store.totalBytes, one)
})

t.test('per model: a response is found only with the model that answered it', async (t) => {
  const store = new ResponseStore()
  store.put(stored('a', 'acme/one'))
  t.ok(store.get('a', anyone, 'acme/one'))
  t.equal(store.get('a', anyone, 'acme/two'), null)
  t.equal(store.item('msg_a', null, 'acme/two'), null)
  t.ok(store.get('a', anyone), 'any model when none is named (GET /v1/responses/{id})')
  store.put(stored('a', 'acme/two'))
  t.equal(store.size, 1, 'the same id again replaces it')
  t.equal(store.get('a', anyone, 'acme/one'), null)
})

t.test('per key: a response is its key\'s; another key finds it as absent as an unknown id, an admin finds any', async (t) => {
  const store = new ResponseStore()
  store.put(stored('a', 'acme/a', 'x', 'alice'))
  store.put(stored('b', 'acme/a', 'x', 'bob'))
  t.ok(store.get('a', { owner: 'alice' }), 'its own key')
  t.equal(store.get('a', { owner: 'bob' }), null, 'another key: nothing')
  t.equal(store.get('a', { owner: null }), null, 'nor a request without a key')
  t.equal(store.item('msg_a', 'bob', 'acme/a'), null, 'nor its items')
  t.same(store.item('msg_a', 'alice', 'acme/a'), stored('a').response.output[0], 'its own key reaches its items')
  t.ok(store.get('a', 'any'), 'an admin')
  t.notOk(store.delete('a', { owner: 'bob' }), 'another key cannot delete it')
  t.ok(store.get('a', { owner: 'alice' }), 'so it is still there')
  t.same(store.list().map((s) => [s.id, s.owner, s.model, s.created_at, s.status]).sort(), [['a', 'alice', 'acme/a', 1700000000, 'completed'], ['b', 'bob', 'acme/a', 1700000000, 'completed']], 'the list names each one\'s key')
  t.ok(store.delete('b', 'any'), 'an admin deletes any')
  t.ok(store.delete('a', { owner: 'alice' }), 'a key its own')
  t.equal(store.size, 0)
})
