import { join } from 'node:path'
import t from 'tap'
import { hashSecret, writeKeysFile, type Scope } from '../../../plugins/security/keys-file.js'
import { tempDir } from '../../helpers/app.js'
import { serveTinyModels } from '../../helpers/inference.js'

// Stored Responses are their key's: another key finds one as absent as an unknown id, for GET, DELETE,
// previous_response_id and item_reference alike, so that it cannot tell one exists; an admin key reads, lists and
// deletes any. Real keys, the real gateway and llama-server on the tiny model.

const KEYS: Record<string, { secret: string, scopes: Scope[] }> = {
  alice: { secret: 'lg-test-responses-alice-0123456789', scopes: ['infer'] },
  bob: { secret: 'lg-test-responses-bob-000123456789', scopes: ['infer'] },
  ops: { secret: 'lg-test-responses-ops-000123456789', scopes: ['infer', 'admin'] },
}
const ASK = { model: 'acme/tiny', max_output_tokens: 3 }

t.test('a stored response is its key\'s: another key gets what an unknown id gets; an admin reaches any', async (t) => {
  const keysFile = join(await tempDir(t), 'keys.yaml')
  await writeKeysFile(keysFile, {
    keys: Object.entries(KEYS).map(([name, k]) => ({ name, hash: hashSecret(k.secret), scopes: k.scopes, models: ['*'], limits: {}, created: '' })),
  })
  const { url } = await serveTinyModels(t, ['acme/tiny'], { auth: { keys_file: keysFile } })
  const call = async (key: string, method: string, path: string, body?: unknown): Promise<{ status: number, body: any }> => {
    const res = await fetch(url + path, {
      method,
      headers: { authorization: `Bearer ${KEYS[key]!.secret}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    })
    return { status: res.status, body: await res.json() }
  }
  // The answer for `id` and for an id nobody has, the same once the id is set aside.
  const sameAsUnknown = async (key: string, method: string, path: (id: string) => string, id: string, body?: (id: string) => unknown): Promise<void> => {
    const theirs = await call(key, method, path(id), body?.(id))
    const none = await call(key, method, path('resp_nothere'), body?.('resp_nothere'))
    t.ok(theirs.status === 404 || theirs.status === 400, `${method} ${path('<id>')}: ${theirs.status}`)
    t.same({ status: theirs.status, body: JSON.parse(JSON.stringify(theirs.body).replaceAll(id, 'X')) },
      { status: none.status, body: JSON.parse(JSON.stringify(none.body).replaceAll('resp_nothere', 'X')) }, `${method} ${path('<id>')} as ${key}: the same as an unknown id`)
  }

  const first = await call('alice', 'POST', '/v1/responses', { ...ASK, input: 'hi' })
  t.equal(first.status, 200)
  const id = first.body.id as string
  const itemId = (first.body.output as Array<{ id: string }>)[0]!.id
  t.equal((await call('alice', 'GET', `/v1/responses/${id}`)).status, 200, 'its key reads it')
  t.equal((await call('alice', 'POST', '/v1/responses', { ...ASK, input: 'more', previous_response_id: id })).status, 200, 'and continues it')
  t.equal((await call('alice', 'POST', '/v1/responses', { ...ASK, input: [{ type: 'item_reference', id: itemId }, { role: 'user', content: 'more' }] })).status, 200, 'and refers to its items')

  // Another key with the same scope: nothing tells it the response exists.
  await sameAsUnknown('bob', 'GET', (r) => `/v1/responses/${r}`, id)
  t.equal((await call('bob', 'GET', `/v1/responses/${id}`)).status, 404)
  await sameAsUnknown('bob', 'DELETE', (r) => `/v1/responses/${r}`, id)
  await sameAsUnknown('bob', 'POST', () => '/v1/responses', id, (r) => ({ ...ASK, input: 'more', previous_response_id: r }))
  t.match(await call('bob', 'POST', '/v1/responses', { ...ASK, input: 'more', previous_response_id: id }), { status: 400, body: { error: { code: 'previous_response_not_found' } } })
  const reference = (item: string) => ({ ...ASK, input: [{ type: 'item_reference', id: item }, { role: 'user', content: 'more' }] })
  const theirItem = await call('bob', 'POST', '/v1/responses', reference(itemId))
  const noItem = await call('bob', 'POST', '/v1/responses', reference('msg_nothere'))
  t.same([theirItem.status, theirItem.body.error.code], [noItem.status, noItem.body.error.code], 'item_reference: the same as an unknown item')
  t.equal(theirItem.body.error.message.replace(itemId, 'X'), noItem.body.error.message.replace('msg_nothere', 'X'))
  t.match(await call('bob', 'GET', '/v1/responses'), { status: 403, body: { error: { message: /lacks the "admin" scope/ } } }, 'only an admin lists them')
  t.equal((await call('alice', 'GET', `/v1/responses/${id}`)).status, 200, 'still there: the other key\'s DELETE did nothing')

  // An admin key reads, lists and deletes any; it continues only its own conversations.
  const listed = await call('ops', 'GET', '/v1/responses')
  t.equal(listed.status, 200)
  t.match(listed.body, { object: 'list' })
  t.match((listed.body.data as Array<{ id: string }>).find((r) => r.id === id), { id, owner: 'alice', model: 'acme/tiny', status: 'incomplete', created_at: Number })
  t.ok((listed.body.data as Array<{ owner: string }>).every((r) => r.owner === 'alice'), 'each with its key')
  t.match(await call('ops', 'GET', `/v1/responses/${id}`), { status: 200, body: { id } })
  t.match(await call('ops', 'POST', '/v1/responses', { ...ASK, input: 'more', previous_response_id: id }), { status: 400, body: { error: { code: 'previous_response_not_found' } } }, 'a conversation is continued by its own key only')
  const mine = await call('ops', 'POST', '/v1/responses', { ...ASK, input: 'hi' })
  t.equal((await call('alice', 'GET', `/v1/responses/${mine.body.id as string}`)).status, 404, 'an admin\'s response is its own too')
  t.same(await call('ops', 'DELETE', `/v1/responses/${id}`), { status: 200, body: { id, object: 'response', deleted: true } })
  t.equal((await call('alice', 'GET', `/v1/responses/${id}`)).status, 404, 'gone for its key')
})
