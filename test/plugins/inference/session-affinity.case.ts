import t from 'tap'
import { acquireRequest } from '../../../plugins/inference/run-leased.js'
import { sessionOf } from '../../../plugins/inference/session-affinity.js'
import { pickUpstream } from '../../../plugins/upstreams/upstream-routing.js'

t.test('the session a request names: pi\'s headers, then the body\'s ids, the caller\'s own id last', async (t) => {
  t.equal(sessionOf({ 'x-session-affinity': 'pi-1', session_id: 'h' }, { prompt_cache_key: 'k' }), 'pi-1', 'pi\'s header first')
  t.equal(sessionOf({ session_id: 'h' }, { prompt_cache_key: 'k' }), 'h', 'pi\'s session_id header')
  t.equal(sessionOf({}, { session_id: 'b', prompt_cache_key: 'k' }), 'b', 'session_id in the body')
  t.equal(sessionOf({}, { prompt_cache_key: 'k', user: 'u' }), 'k', 'OpenAI\'s prompt_cache_key over its user')
  t.equal(sessionOf({}, { user: 'u', metadata: { user_id: 'm' } }), 'u', 'OpenAI\'s user where nothing else is sent')
  t.equal(sessionOf({}, { metadata: { user_id: 'user_abc_session_1' } }), 'user_abc_session_1', 'Anthropic\'s metadata.user_id')
  t.equal(sessionOf({}, { user: '  ', prompt_cache_key: 7 }), undefined, 'blank or not a string: none')
  t.equal(sessionOf({}, []), undefined)
  t.equal(sessionOf({}, { user: 'x'.repeat(5000) })!.length, 256, 'a long id is cut')
})

t.test('a session picks its upstream by its id, whatever its conversation; per cache group', async (t) => {
  const names = ['one', 'two', 'three', 'four', 'five']
  const pick = (ask: Parameters<typeof acquireRequest>[0]): number => pickUpstream(names, 'prefix', { affinity: acquireRequest(ask).affinity }, () => 0)
  const usage = (group: string) => ({ cacheGroup: group }) as NonNullable<Parameters<typeof acquireRequest>[0]['usage']>
  const chosen = new Set<number>()
  for (let i = 0; i < 20; i++) {
    chosen.add(pick({ model: 'm', session: 's-1', affinity: () => `conversation ${i}`, usage: usage('red') }))
  }
  t.equal(chosen.size, 1, 'twenty conversations of one session: one upstream')
  const byConversation = new Set(Array.from({ length: 20 }, (_, i) => pick({ model: 'm', affinity: () => `conversation ${i}` })))
  t.ok(byConversation.size > 1, `without a session, the conversation decides (${byConversation.size} upstreams)`)
  t.equal(acquireRequest({ model: 'm', session: 's-1' }).session, 's-1', 'the session reaches the scheduler')
  const groups = new Set(Array.from({ length: 20 }, (_, i) => acquireRequest({ model: 'm', session: 's-1', usage: usage(`g${i}`) }).affinity!()))
  t.equal(groups.size, 20, 'the same id in other cache groups is another session')
})
