// Keys kept apart in the prompt caches, on the real llama-server built with llamagate's patch set: a key
// never reuses what another group's key computed, while loaded, after a swap or after a restart; keys of one group do.
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { hashSecret, writeKeysFile, type KeyEntry } from '../../../plugins/security/keys-file.js'
import { buildTestApp, tempDir } from '../../helpers/app.js'
import { importLongContextModel, post, serveTinyModels, type InferenceServer } from '../../helpers/inference.js'

const WORDS = 'the quick brown fox jumps over the lazy dog while seven wise owls count the stars above a quiet harbour'.split(' ')
/** A system prompt of ~2,000 tokens: the secret one key's team wrote. */
const SECRET = Array.from({ length: 520 }, (_, i) => WORDS[(i * 7 + (i % 5)) % WORDS.length]).join(' ')

const secretOf = (name: string): string => `lg-test-${name}-0123456789abcdef`
// alice and carol are one team; bob and each outsider are on their own. A key reuses its own computations (as it
// should): each check of another group asks with a key that has computed nothing yet.
const OUTSIDERS = Array.from({ length: 6 }, (_, i) => `outsider-${i + 1}`)
const KEYS: Record<string, Partial<KeyEntry>> = {
  alice: { cache_group: 'red' }, carol: { cache_group: 'red' }, bob: {}, ...Object.fromEntries(OUTSIDERS.map((name) => [name, {}])),
}

async function serveGroups (t: Test, values: Record<string, unknown> = {}): Promise<InferenceServer> {
  const keysFile = join(await tempDir(t), 'keys.yaml')
  await writeKeysFile(keysFile, {
    keys: Object.entries(KEYS).map(([name, more]) => ({ name, hash: hashSecret(secretOf(name)), scopes: ['infer' as const], models: ['*'], limits: {}, created: '', ...more })),
  })
  const server = await serveTinyModels(t, [], {
    auth: { keys_file: keysFile }, prompt_cache: { min_tokens: 32 },
    models: { 'acme/long': { options: { num_ctx: 4096 } } },
    ...values,
  })
  await importLongContextModel(t, server.app, 'acme/long')
  return server
}

interface Answer { status: number, cached: number, prompt: number }

/** One turn of key `name` with the secret system prompt, on the OpenAI surface or Anthropic's. */
async function ask (url: string, name: string, surface: 'openai' | 'anthropic' = 'openai'): Promise<Answer> {
  const messages = [{ role: 'user', content: 'what did I say?' }]
  if (surface === 'anthropic') {
    const res = await post(`${url}/v1/messages`, { model: 'acme/long', system: SECRET, messages, max_tokens: 1 }, { 'x-api-key': secretOf(name) })
    const body = await res.json() as { usage?: { input_tokens?: number, cache_read_input_tokens?: number } }
    const cached = body.usage?.cache_read_input_tokens ?? -1
    return { status: res.status, cached, prompt: (body.usage?.input_tokens ?? 0) + cached }
  }
  const res = await post(`${url}/v1/chat/completions`, { model: 'acme/long', messages: [{ role: 'system', content: SECRET }, ...messages], max_tokens: 1 },
    { authorization: `Bearer ${secretOf(name)}` })
  const body = await res.json() as { usage?: { prompt_tokens?: number, prompt_tokens_details?: { cached_tokens?: number } } }
  return { status: res.status, cached: body.usage?.prompt_tokens_details?.cached_tokens ?? -1, prompt: body.usage?.prompt_tokens ?? -1 }
}

/** A key of another group, new to the prompt, learns nothing; the same group's key reuses nearly all of it. */
async function checkApart (t: Test, url: string, when: string, outsiders: string[]): Promise<void> {
  for (const surface of ['openai', 'anthropic'] as const) {
    const outsider = outsiders.shift()!
    const other = await ask(url, outsider, surface)
    t.equal(other.status, 200)
    t.equal(other.cached, 0, `${when}, ${surface}: ${outsider}, in another group, reuses nothing of red's prompt (${other.cached} of ${other.prompt} tokens)`)
    const carol = await ask(url, 'carol', surface)
    t.ok(carol.cached > 0.9 * carol.prompt, `${when}, ${surface}: carol, in alice's group, reuses ${carol.cached} of ${carol.prompt}`)
  }
}

t.test('two groups with the same 2,000-token prompt: nothing shared while loaded, after a swap, after a restart', async (t) => {
  const { app, url } = await serveGroups(t)
  const outsiders = [...OUTSIDERS]
  const first = await ask(url, 'alice')
  t.equal(first.status, 200)
  t.ok(first.prompt >= 1900, `a prompt of ${first.prompt} tokens`)
  await checkApart(t, url, 'while loaded', outsiders)

  // A swap: the model stops (its slot saved to disk), and loads again (restored) for the next request.
  t.equal((await ask(url, 'alice')).status, 200)
  await post(`${url}/api/stop`, { model: 'acme/long' }, { authorization: `Bearer ${secretOf('alice')}` })
  await checkApart(t, url, 'after a swap', outsiders)

  // A restart: the saves are what a new gateway finds.
  t.equal((await ask(url, 'alice')).status, 200)
  const { config } = app
  await app.close()
  const again = await buildTestApp(config)
  t.teardown(() => again.close())
  await checkApart(t, await again.listen({ host: '127.0.0.1', port: 0 }), 'after a restart', outsiders)
})

t.test('a request\'s own cache_salt splits its group further, and never joins another', async (t) => {
  const { url } = await serveGroups(t)
  const salted = async (name: string, salt?: string): Promise<Answer> => {
    const res = await post(`${url}/v1/chat/completions`, { model: 'acme/long', messages: [{ role: 'system', content: SECRET }, { role: 'user', content: 'hi' }], max_tokens: 1, ...(salt !== undefined ? { cache_salt: salt } : {}) },
      { authorization: `Bearer ${secretOf(name)}` })
    const body = await res.json() as { usage?: { prompt_tokens?: number, prompt_tokens_details?: { cached_tokens?: number } } }
    return { status: res.status, cached: body.usage?.prompt_tokens_details?.cached_tokens ?? -1, prompt: body.usage?.prompt_tokens ?? -1 }
  }
  t.equal((await salted('alice', 'user-1')).status, 200)
  t.equal((await salted('carol', 'user-2')).cached, 0, 'another salt of the same group: nothing shared')
  t.ok((await salted('carol', 'user-1')).cached > 1900, 'the same salt in the same group: shared')
  t.equal((await salted('bob', 'user-1')).cached, 0, 'the same salt from another group joins nothing')
  const bad = await post(`${url}/v1/chat/completions`, { model: 'acme/long', messages: [{ role: 'user', content: 'hi' }], max_tokens: 1, cache_salt: 42 }, { authorization: `Bearer ${secretOf('bob')}` })
  t.equal(bad.status, 400)
  t.match(await bad.json(), { error: { message: /cache_salt: expected a string of at most 256 characters/ } })
})
