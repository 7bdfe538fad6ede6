// Session affinity on the real llama-server: a session's turns run on the slot that holds its cache (id_slot), and
// reuse its prefix there, whichever the client names it by (pi's x-session-affinity header, OpenAI's
// prompt_cache_key); even a turn that shares nothing with the slot's cache (a compacted conversation) goes there.
import { join } from 'node:path'
import t from 'tap'
import { hashSecret, writeKeysFile } from '../../../plugins/security/keys-file.js'
import { tempDir } from '../../helpers/app.js'
import { post, serveTinyModels } from '../../helpers/inference.js'

const WORDS = 'amber brook cedar delta ember fjord glade harbor iris juniper kestrel lagoon meadow nectar orchid pebble quartz raven'.split(' ')
const text = (seed: number, n: number): string => Array.from({ length: n }, (_, i) => WORDS[(i * seed + seed) % WORDS.length]).join(' ')

interface Turn { slot: number, cached: number, prompt: number, reply: string }

// Each key its own cache group: alice runs session a, bob session b.
const secretOf = (name: string): string => `lg-test-${name}-0123456789abcdef`

t.test('two sessions, four slots: each session\'s follow-ups land on its slot and reuse its prefix', async (t) => {
  const keysFile = join(await tempDir(t), 'keys.yaml')
  await writeKeysFile(keysFile, { keys: ['alice', 'bob'].map((name) => ({ name, hash: hashSecret(secretOf(name)), scopes: ['infer' as const], models: ['*'], limits: {}, created: '' })) })
  const { app, url } = await serveTinyModels(t, ['acme/tiny'], { auth: { keys_file: keysFile }, default_options: { num_ctx: 1024, num_parallel: 4, max_tokens: 4 } })
  const servedBy = async (): Promise<number> => {
    const runtime = app.scheduler.loadedRuntimes().find((r) => r.model === 'acme/tiny')!
    const slots = await runtime.endpoint.slotCaches(AbortSignal.timeout(5000))
    // The slot that ran the latest task served the request just answered.
    return slots.reduce((a, b) => (b.task ?? -1) > (a.task ?? -1) ? b : a).id
  }
  const turn = async (messages: unknown[], session: { header?: string, key?: string }, as: string): Promise<Turn> => {
    const res = await post(`${url}/v1/chat/completions`, { model: 'acme/tiny', messages, ...(session.key ? { prompt_cache_key: session.key } : {}) },
      { authorization: `Bearer ${secretOf(as)}`, ...(session.header ? { 'x-session-affinity': session.header } : {}) })
    t.equal(res.status, 200)
    const body = await res.json() as { choices: Array<{ message: { content: string } }>, usage: { prompt_tokens: number, prompt_tokens_details?: { cached_tokens?: number } } }
    return { slot: await servedBy(), cached: body.usage.prompt_tokens_details?.cached_tokens ?? 0, prompt: body.usage.prompt_tokens, reply: body.choices[0]!.message.content }
  }
  const sessions = [
    { name: 'a (x-session-affinity)', key: 'alice', how: { header: 'pi-session-a' }, messages: [{ role: 'system', content: text(3, 40) }] as unknown[], turns: [] as Turn[] },
    { name: 'b (prompt_cache_key)', key: 'bob', how: { key: 'cache-key-b' }, messages: [{ role: 'system', content: text(5, 40) }] as unknown[], turns: [] as Turn[] },
  ]
  for (let round = 0; round < 3; round++) {
    for (const s of sessions) {
      s.messages.push({ role: 'user', content: text(round + 7, 6) })
      const answer = await turn(s.messages, s.how, s.key)
      s.messages.push({ role: 'assistant', content: answer.reply })
      s.turns.push(answer)
    }
  }
  const [a, b] = sessions.map((s) => s.turns)
  for (const [s, turns] of [[sessions[0]!, a!], [sessions[1]!, b!]] as const) {
    t.same(turns.map((x) => x.slot), [turns[0]!.slot, turns[0]!.slot, turns[0]!.slot], `${s.name}: every turn on slot ${turns[0]!.slot}`)
    for (const [i, x] of turns.slice(1).entries()) {
      t.ok(x.cached >= 0.9 * turns[i]!.prompt, `${s.name}, turn ${i + 2}: ${x.cached} of ${x.prompt} tokens reused (the turn before read ${turns[i]!.prompt})`)
    }
  }
  t.not(a![0]!.slot, b![0]!.slot, 'the two sessions on two slots')
  // A turn that shares nothing with its slot's cache (llama-server alone would put it on an unused slot) stays on its session's.
  const compacted = await turn([{ role: 'system', content: text(11, 20) }, { role: 'user', content: 'summary so far' }], sessions[0]!.how, 'alice')
  t.equal(compacted.slot, a![0]!.slot, `a compacted conversation of session a: still slot ${a![0]!.slot}`)
  const other = await turn([{ role: 'system', content: text(13, 20) }, { role: 'user', content: 'hello' }], {}, 'alice')
  t.not(other.slot, b![0]!.slot, `a request without a session does not land on b's slot by its prompt (slot ${other.slot})`)
  // Bob naming alice's session, with her conversation: a session of his own group, on another slot, reusing nothing.
  const borrowed = await turn(sessions[0]!.messages.slice(0, -1), sessions[0]!.how, 'bob')
  t.not(borrowed.slot, a![0]!.slot, `bob's "${sessions[0]!.how.header}" is not alice's: slot ${borrowed.slot}, not ${a![0]!.slot}`)
  t.equal(borrowed.cached, 0, 'and reuses nothing of alice\'s')
  const back = await turn(sessions[0]!.messages.slice(0, 2), sessions[0]!.how, 'alice')
  t.equal(back.slot, a![0]!.slot, 'alice\'s session still has its slot')
})
