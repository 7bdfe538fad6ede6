// What models say of themselves, on every surface an agent reads (docs/api.md "Context lengths"), checked against
// what llama-server itself says it loaded (/props?model=, its own answer); and the router-mode subset of
// llama-server's API (GET /models, POST /models/load and /models/unload, GET /props) with the shapes it answers.
import { join } from 'node:path'
import t from 'tap'
import { hashSecret, writeKeysFile } from '../../../plugins/security/keys-file.js'
import { writeTinyGguf } from '../../../scripts/fixtures/tiny-model.js'
import { tempDir } from '../../helpers/app.js'
import { post, serveTinyModels } from '../../helpers/inference.js'
import { until } from '../../helpers/until.js'

type Json = Record<string, any>
const getJson = async (url: string, headers: Record<string, string> = {}): Promise<{ status: number, body: Json }> => {
  const res = await fetch(url, { headers })
  return { status: res.status, body: await res.json() as Json }
}
const postJson = async (url: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number, body: Json }> => {
  const res = await post(url, body, headers)
  return { status: res.status, body: await res.json() as Json }
}

// acme/tiny is trained on 2048 tokens and configured for 4096: llama-server caps each slot at 2048.
// acme/long is trained on 32768 and loads with the default 512, growing for longer prompts.
async function serveDiscovery (t: Parameters<typeof serveTinyModels>[0], values: Record<string, unknown> = {}) {
  const server = await serveTinyModels(t, ['acme/tiny'], { models: { 'acme/tiny': { options: { num_ctx: 4096 } } }, ...values })
  const file = join(await tempDir(t, 'llamagate-models-'), 'long.gguf')
  await writeTinyGguf({
    file, name: 'acme/long', nCtxTrain: 32_768, seed: 7,
    metadata: {
      'general.license': { type: 'string', value: 'apache-2.0' },
      // Ids of ordinary pieces: what matters to the capability is that the header names all three.
      'tokenizer.ggml.fim_pre_token_id': { type: 'u32', value: 10 },
      'tokenizer.ggml.fim_suf_token_id': { type: 'u32', value: 11 },
      'tokenizer.ggml.fim_mid_token_id': { type: 'u32', value: 12 },
    },
  })
  await server.app.store.import('acme/long', file)
  return server
}

const entryOf = (list: Json[], id: string, key = 'id'): Json => list.find((m) => m[key] === id)!

t.test('discovery answers agree with the loaded context, on every surface, through a load, a growth and an unload', async (t) => {
  const { url } = await serveDiscovery(t)
  const models = async () => (await getJson(`${url}/models`)).body.data as Json[]
  const v1 = async () => (await getJson(`${url}/v1/models`)).body.data as Json[]
  const ps = async () => (await getJson(`${url}/api/ps`)).body.models as Json[]
  const props = async (model: string, query = '') => getJson(`${url}/props?model=${encodeURIComponent(model)}${query}`)

  // Nothing loaded: the trained context, and the window a request may fill.
  const listed = await models()
  t.same(listed.map((m) => m.id).sort(), ['acme/long', 'acme/tiny'])
  const tinyListed = entryOf(listed, 'acme/tiny')
  t.same(tinyListed.status, { value: 'unloaded', args: [] }, 'status unloaded, as llama-server\'s router says it')
  t.same(tinyListed.architecture, { input_modalities: ['text'], output_modalities: ['text'] })
  t.match(tinyListed, { object: 'model', owned_by: 'acme', aliases: [], tags: [], can_remove: false, meta: { n_ctx_train: 2048, n_ctx: 2048 } })
  t.equal(entryOf(await v1(), 'acme/long').context_window, 32_768, 'a chat model\'s window: its trained context, which the context grows to')
  const longShow = (await postJson(`${url}/api/show`, { model: 'acme/long' })).body
  t.equal(longShow.model_info['llama.context_length'], 32_768, '/api/show model_info: the trained context')
  t.equal(longShow.license, 'apache-2.0', '/api/show license: the GGUF\'s general.license')
  t.ok(longShow.capabilities.includes('insert'), `insert: the header names FIM tokens (${longShow.capabilities.join(', ')})`)
  const tinyShow = (await postJson(`${url}/api/show`, { model: 'acme/tiny' })).body
  t.notOk('license' in tinyShow, 'no license where the GGUF names none')
  t.notOk(tinyShow.capabilities.includes('insert'))
  const noInsert = await post(`${url}/api/generate`, { model: 'acme/tiny', prompt: 'def f(', suffix: ')', stream: false })
  t.equal(noInsert.status, 400, 'and /api/generate agrees: a suffix for a model without insert is a 400')

  // POST /models/load answers at once; the status says when it serves.
  t.same(await postJson(`${url}/models/load`, { model: 'acme/tiny' }), { status: 200, body: { success: true } })
  t.same((await postJson(`${url}/models/load`, { model: 'acme/tiny' })).body, { error: { code: 400, message: 'model is already running', type: 'invalid_request_error' } },
    'loading a model that is loading or loaded: llama-server\'s 400')
  await until('acme/tiny loaded', async () => entryOf(await models(), 'acme/tiny').status.value === 'loaded')
  const tinyProps = await props('acme/tiny', '&autoload=false')
  t.equal(tinyProps.status, 200)
  t.equal(tinyProps.body.model_alias, 'acme/tiny')
  t.equal(tinyProps.body.total_slots, 2)
  // llama-server's model_path is the file's absolute path (the user's folders): the name stands in for it.
  t.equal(tinyProps.body.model_path, 'acme/tiny')
  t.notMatch(JSON.stringify(tinyProps.body), /"\/(root|home|tmp)\//, 'no path of this machine in the answer')
  for (const hidden of ['ui_settings', 'endpoint_slots', 'endpoint_props', 'endpoint_metrics']) t.notOk(hidden in tinyProps.body, `no ${hidden}`)
  const served = tinyProps.body.default_generation_settings.n_ctx
  t.equal(served, 2048, 'llama-server holds 2048 per slot: num_ctx 4096, capped at the trained context')
  const tinyPs = entryOf(await ps(), 'acme/tiny', 'name')
  t.equal(tinyPs.context_length, served, '/api/ps context_length: what llama-server holds, not the 4096 asked')
  t.equal(tinyPs.max_context_length, served, 'max_context_length: no growth past the trained context')
  const tinyV1 = entryOf(await v1(), 'acme/tiny')
  t.same([tinyV1.context_window, tinyV1.max_context_length, tinyV1.meta.n_ctx], [served, served, served], '/v1/models: the same window')

  // A model loaded by /props?model= (autoload, as llama-server's router does), then grown by a longer prompt.
  t.same((await props('acme/long', '&autoload=false')).body.error, { code: 400, message: 'model is not loaded', type: 'invalid_request_error' })
  t.equal((await props('acme/long')).body.default_generation_settings.n_ctx, 512, 'autoload: loaded with the default num_ctx')
  let longPs = entryOf(await ps(), 'acme/long', 'name')
  t.same([longPs.context_length, longPs.max_context_length], [512, 32_768], '/api/ps: 512 allocated, growing to 32768')
  const prompt = Array.from({ length: 700 }, (_, i) => `w${i % 50}`).join(' ')
  const grown = await post(`${url}/v1/completions`, { model: 'acme/long', prompt, max_tokens: 1 })
  t.equal(grown.status, 200, 'a prompt longer than 512 tokens is served')
  const longProps = (await props('acme/long')).body.default_generation_settings.n_ctx
  t.equal(longProps, 8192, 'llama-server now holds 8192 per slot (the first size of the ladder)')
  longPs = entryOf(await ps(), 'acme/long', 'name')
  t.equal(longPs.context_length, longProps, '/api/ps context_length follows the growth')
  const longListed = entryOf(await models(), 'acme/long')
  t.same([longListed.status.value, longListed.meta.n_ctx, longListed.context_window], ['loaded', 32_768, 32_768], 'the window stays the most it grows to')

  // Unloading, as keep_alive 0: once idle, it goes.
  t.same(await postJson(`${url}/models/unload`, { model: 'acme/long' }), { status: 200, body: { success: true } })
  await until('acme/long unloaded', async () => entryOf(await models(), 'acme/long').status.value === 'unloaded')
  t.notOk((await ps()).some((m) => m.name === 'acme/long'), '/api/ps no longer lists it')
  t.same((await postJson(`${url}/models/unload`, { model: 'acme/long' })).body.error, { code: 400, message: 'model is not running', type: 'invalid_request_error' })
})

t.test('router-mode refusals in llama-server\'s shapes; the router\'s own /props', async (t) => {
  const { url } = await serveTinyModels(t, ['acme/tiny'])
  t.same(await postJson(`${url}/models/load`, { model: 'acme/nope' }), { status: 404, body: { error: { code: 404, message: 'model is not found', type: 'not_found_error' } } })
  t.same(await postJson(`${url}/models/unload`, { model: 'acme/nope' }), { status: 400, body: { error: { code: 400, message: 'model is not found', type: 'invalid_request_error' } } })
  t.same(await getJson(`${url}/props?model=acme%2Fnope`), { status: 400, body: { error: { code: 400, message: 'model \'acme/nope\' not found', type: 'invalid_request_error' } } })
  const noModel = await postJson(`${url}/models/load`, {})
  t.equal(noModel.status, 400)
  t.equal(noModel.body.error.type, 'invalid_request_error', 'a body without model: llama-server\'s shape too')
  // A page of another site (an <img src> sends no Origin; Fetch Metadata says cross-site) loads nothing.
  const crossSite = await getJson(`${url}/props?model=acme%2Ftiny`, { 'sec-fetch-site': 'cross-site' })
  t.equal(crossSite.status, 403, 'a cross-site GET may not load a model')
  t.match(crossSite.body.error.message, /another site may not load a model/)
  t.equal(((await getJson(`${url}/models`)).body.data as Json[]).find((m) => m.id === 'acme/tiny')!.status.value, 'unloaded', 'and nothing was loaded')
  const router = await getJson(`${url}/props`)
  t.match(router, { status: 200, body: { role: 'router', model_path: 'none', models_autoload: true, default_generation_settings: { n_ctx: 0 } } })
})

t.test('keys: a key sees and loads only its models, ?model= included', async (t) => {
  const keysFile = join(await tempDir(t), 'keys.yaml')
  await writeKeysFile(keysFile, { keys: [{ name: 'tiny-only', hash: hashSecret('lg-test-tiny-only-0123456789'), scopes: ['infer'], models: ['acme/tiny'], limits: {}, created: '' }] })
  const { url } = await serveDiscovery(t, { auth: { keys_file: keysFile } })
  const key = { authorization: 'Bearer lg-test-tiny-only-0123456789' }
  t.equal((await getJson(`${url}/models`)).status, 401, 'no key: refused')
  t.same((await getJson(`${url}/models`, key)).body.data.map((m: Json) => m.id), ['acme/tiny'], 'GET /models lists the key\'s models only')
  const other = await getJson(`${url}/props?model=acme%2Flong`, key)
  t.equal(other.status, 403, 'another model by ?model=: 403')
  t.equal(other.body.error.type, 'permission_error')
  t.equal((await postJson(`${url}/models/load`, { model: 'acme/long' }, key)).status, 403, 'loading another model: 403')
})
