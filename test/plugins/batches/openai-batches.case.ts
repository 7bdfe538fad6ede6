// OpenAI's Batch API through the official SDK, unconfigured beyond its base URL and key: files.create, batches.create,
// retrieve, list, cancel, files.content, on batches of chat completions, embeddings and responses requests; a bad line
// lands in the error file, not a failed batch; another key sees none of it; usage counts the batch's tokens.
import { join } from 'node:path'
import OpenAI, { toFile } from 'openai'
import t, { type Test } from 'tap'
import { hashSecret, readKeysFile, writeKeysFile } from '../../../plugins/security/keys-file.js'
import { tempDir } from '../../helpers/app.js'
import { serveRealisticModels } from '../../helpers/inference.js'
import { until } from '../../helpers/until.js'

const SECRETS = { alice: 'lg-test-alice-0123456789abcdefg', bob: 'lg-test-bob-0123456789abcdefghi' }
const jsonl = (lines: unknown[]): string => lines.map((l) => typeof l === 'string' ? l : JSON.stringify(l)).join('\n') + '\n'
const chat = (id: string, content: string, extra: Record<string, unknown> = {}): unknown =>
  ({ custom_id: id, method: 'POST', url: '/v1/chat/completions', body: { model: 'acme/chat', max_tokens: 3, messages: [{ role: 'user', content }], ...extra } })

interface ResultLine { id: string, custom_id: string | null, response: { status_code: number, body: any } | null, error: { code: string, message: string } | null }

async function results (client: OpenAI, fileId: string | null | undefined): Promise<ResultLine[]> {
  if (fileId === null || fileId === undefined) return []
  const text = await (await client.files.content(fileId)).text()
  t.ok(text === '' || text.endsWith('\n'), 'whole lines only')
  return text.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as ResultLine)
}

/** Awaits a call the test expects to fail with `status`. */
async function refused (t: Test, call: Promise<unknown>, status: number, what: string, message?: RegExp): Promise<void> {
  const err = await call.then(() => null, (e: unknown) => e as { status?: number, message?: string })
  t.equal(err?.status, status, what)
  if (message !== undefined) t.match(err?.message, message, what)
}

async function finished (client: OpenAI, id: string): Promise<OpenAI.Batches.Batch> {
  return await until(`batch ${id} over`, async () => {
    const batch = await client.batches.retrieve(id)
    return ['completed', 'failed', 'expired', 'cancelled'].includes(batch.status) ? batch : null
  }, 120_000, 100)
}

t.test('the Batch API with keys: chat, embeddings and responses batches; bad lines; another key sees nothing; usage exact', async (t) => {
  const dir = await tempDir(t)
  const keysFile = join(dir, 'keys.yaml')
  await writeKeysFile(keysFile, {
    keys: (['alice', 'bob'] as const).map((name) => ({ name, hash: hashSecret(SECRETS[name]), scopes: ['infer' as const], models: ['*'], limits: {}, created: new Date().toISOString() })),
  })
  const { app, url } = await serveRealisticModels(t, { 'acme/chat': 'qwen25', 'acme/bge': 'bert' }, { auth: { keys_file: keysFile }, default_options: { num_parallel: 2, ignore_eos: true } })
  const alice = new OpenAI({ baseURL: `${url}/v1`, apiKey: SECRETS.alice })
  const bob = new OpenAI({ baseURL: `${url}/v1`, apiKey: SECRETS.bob })

  const input = jsonl([
    chat('c1', 'one'), chat('c2', 'two'), 'not json', chat('c3', 'three'),
    { custom_id: 'wrong-url', method: 'POST', url: '/v1/embeddings', body: { model: 'acme/chat' } },
    chat('c1', 'a second c1'), chat('c4', 'four'),
  ])
  const file = await alice.files.create({ file: await toFile(Buffer.from(input), 'chat.jsonl'), purpose: 'batch' })
  t.match(file, { object: 'file', purpose: 'batch', filename: 'chat.jsonl', bytes: Buffer.byteLength(input) })
  const created = await alice.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h', metadata: { job: 'nightly' } })
  t.match(created, { object: 'batch', endpoint: '/v1/chat/completions', input_file_id: file.id, completion_window: '24h', metadata: { job: 'nightly' } })
  t.ok(['validating', 'in_progress'].includes(created.status))

  // Another key: the same answer as for an id that does not exist, for every way in.
  await refused(t, bob.files.retrieve(file.id), 404, 'bob cannot see alice\'s file')
  await refused(t, bob.files.content(file.id), 404, 'nor download it')
  await refused(t, bob.files.delete(file.id), 404, 'nor delete it')
  await refused(t, bob.batches.retrieve(created.id), 404, 'nor see her batch')
  await refused(t, bob.batches.cancel(created.id), 404, 'nor cancel it')
  await refused(t, bob.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' }), 404, 'nor run it')
  t.same((await bob.files.list()).data, [], 'bob\'s file list is empty')
  t.same((await bob.batches.list()).data, [], 'so is his batch list')

  const batch = await finished(alice, created.id)
  t.equal(batch.status, 'completed')
  t.same(batch.request_counts, { total: 7, completed: 4, failed: 3 }, 'every line accounted for: four answered, three bad lines')
  const output = await results(alice, batch.output_file_id)
  t.same(output.map((l) => l.custom_id).sort(), ['c1', 'c2', 'c3', 'c4'], 'one line per request, none twice')
  for (const line of output) {
    t.match(line, { id: /^batch_req_/, response: { status_code: 200, body: { object: 'chat.completion', model: 'acme/chat', usage: { completion_tokens: 3 } } }, error: null })
  }
  t.match(output.find((l) => l.custom_id === 'c1')!.response!.body.choices[0].message, { role: 'assistant' })
  const errors = await results(alice, batch.error_file_id)
  t.equal(errors.length, 3)
  t.match(errors.map((l) => l.error?.message).sort(), [/line 3 is not JSON/, /line 5: url must be the batch's endpoint/, /line 6: custom_id "c1" is used by an earlier line/])
  t.ok((await alice.batches.list()).data.some((b) => b.id === batch.id), 'listed')
  await refused(t, bob.files.content(batch.output_file_id!), 404, 'bob cannot download her results')

  // Usage counts the batch's tokens under the key that made it, exactly.
  const usage = ((await (await fetch(`${url}/api/usage`, { headers: { authorization: `Bearer ${SECRETS.alice}` } })).json()) as { keys: Array<{ totals: { prompt_tokens: number, generated_tokens: number } }> }).keys[0]!
  const prompt = output.reduce((n, l) => n + (l.response!.body.usage.prompt_tokens as number), 0)
  t.same(usage.totals, { ...usage.totals, prompt_tokens: prompt, generated_tokens: 12 }, 'alice is booked the prompts and the 12 tokens her batch generated')

  const embeddings = jsonl([1, 2, 3].map((i) => ({ custom_id: `e${i}`, method: 'POST', url: '/v1/embeddings', body: { model: 'acme/bge', input: `text ${i}` } })))
  const embedFile = await alice.files.create({ file: await toFile(Buffer.from(embeddings), 'embed.jsonl'), purpose: 'batch' })
  const responses = jsonl([1, 2].map((i) => ({ custom_id: `r${i}`, method: 'POST', url: '/v1/responses', body: { model: 'acme/chat', input: `question ${i}`, max_output_tokens: 3 } })))
  const responsesFile = await alice.files.create({ file: await toFile(Buffer.from(responses), 'responses.jsonl'), purpose: 'batch' })
  const embedBatch = await alice.batches.create({ input_file_id: embedFile.id, endpoint: '/v1/embeddings', completion_window: '24h' })
  const responsesBatch = await alice.batches.create({ input_file_id: responsesFile.id, endpoint: '/v1/responses', completion_window: '24h' })
  const embedDone = await finished(alice, embedBatch.id)
  t.same(embedDone.request_counts, { total: 3, completed: 3, failed: 0 })
  t.equal(embedDone.error_file_id, null, 'no error file where nothing failed')
  for (const line of await results(alice, embedDone.output_file_id)) t.match(line.response, { status_code: 200, body: { object: 'list', data: [{ object: 'embedding' }] } })
  const responsesDone = await finished(alice, responsesBatch.id)
  t.same(responsesDone.request_counts, { total: 2, completed: 2, failed: 0 })
  for (const line of await results(alice, responsesDone.output_file_id)) t.match(line.response, { status_code: 200, body: { object: 'response', status: 'incomplete' } })

  const firstPage = await alice.batches.list({ limit: 1 })
  t.equal(firstPage.data.length, 1, 'a page of one (the newest)')
  t.ok([embedBatch.id, responsesBatch.id].includes(firstPage.data[0]!.id), 'one of the two made last (the same second)')
  t.ok(firstPage.has_more)
  t.equal((await alice.files.list({ limit: 2 } as never)).data.length, 2, 'files, two a page')
  // A key revoked while its batch runs: its requests are refused from then on, as the key's own would be.
  const longer = jsonl(Array.from({ length: 8 }, (_, i) => chat(`late${i}`, `question ${i}`, { max_tokens: 64 })))
  const bobFile = await bob.files.create({ file: await toFile(Buffer.from(longer), 'bob.jsonl'), purpose: 'batch' })
  const bobBatch = await bob.batches.create({ input_file_id: bobFile.id, endpoint: '/v1/chat/completions', completion_window: '24h' })
  const keys = readKeysFile(keysFile)
  keys.keys.find((k) => k.name === 'bob')!.revoked = new Date().toISOString()
  await writeKeysFile(keysFile, keys)
  // Bob can no longer ask: the batch is read as the gateway holds it.
  const revokedBatch = await until('bob\'s batch over', () => {
    const record = app.batches.runner.live(bobBatch.id) ?? app.batches.records.get(bobBatch.id)
    return record?.batch.status === 'completed' ? record.batch : null
  }, 60_000, 50)
  await refused(t, bob.batches.retrieve(bobBatch.id), 401, 'bob\'s key is refused at the door')
  await refused(t, alice.batches.retrieve(bobBatch.id), 404, 'alice cannot see bob\'s batch')
  t.ok(revokedBatch.request_counts.failed > 0, `the revoked key's requests were refused (${revokedBatch.request_counts.failed} of 8)`)
  t.equal(revokedBatch.request_counts.completed + revokedBatch.request_counts.failed, 8)
  await alice.files.delete(file.id)
  await refused(t, alice.files.retrieve(file.id), 404, 'a deleted file is gone')
  t.equal((await alice.batches.retrieve(batch.id)).status, 'completed', 'its batch stays, with its results')
})

t.test('cancel mid-batch: nothing more is sent, and every request is accounted for once', async (t) => {
  const { url } = await serveRealisticModels(t, { 'acme/chat': 'qwen25' }, { default_options: { num_parallel: 1, ignore_eos: true } })
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'unused' })
  const lines = Array.from({ length: 20 }, (_, i) => chat(`r${i}`, `request ${i}`, { max_tokens: 128 }))
  const file = await client.files.create({ file: await toFile(Buffer.from(jsonl(lines)), 'many.jsonl'), purpose: 'batch' })
  const created = await client.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' })
  await until('a first answer', async () => (await client.batches.retrieve(created.id)).request_counts!.completed > 0, 60_000, 50)
  const cancelling = await client.batches.cancel(created.id)
  t.ok(['cancelling', 'cancelled'].includes(cancelling.status), `cancelling (${cancelling.status})`)
  const batch = await finished(client, created.id)
  t.equal(batch.status, 'cancelled')
  t.ok(batch.request_counts!.completed < 20, `stopped early (${batch.request_counts!.completed} answered)`)
  const all = [...await results(client, batch.output_file_id), ...await results(client, batch.error_file_id)]
  t.same(all.map((l) => l.custom_id).sort(), lines.map((l) => (l as { custom_id: string }).custom_id).sort(), 'each of the 20 once: answered or cancelled')
  t.ok(all.filter((l) => l.error !== null).every((l) => l.error!.code === 'batch_cancelled'), 'those not run say so')
  t.equal(batch.request_counts!.completed + batch.request_counts!.failed, 20)
  const metrics = await (await fetch(`${url}/metrics`)).text()
  t.match(metrics, /^llamagate_batches\{status="cancelled"\} 1$/m, '/metrics counts the batch by its status')
  t.match(metrics, /^llamagate_batches\{status="in_progress"\} 0$/m, 'every status listed')
  t.match(metrics, /^llamagate_batch_requests\{state="queued"\} 0$/m, 'no request of a batch left to run')
  const byClass = metrics.split('\n').filter((l) => l.startsWith('llamagate_class_requests_total{'))
  t.same(byClass, [`llamagate_class_requests_total{priority="background",model="acme/chat"} ${batch.request_counts!.completed}`], 'each request the batch ran, counted as background work, and nothing else')
})

t.test('refusals: a file of another purpose, a batch of an unknown file, a bad window, an endpoint not served', async (t) => {
  const { url } = await serveRealisticModels(t, {})
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'unused', maxRetries: 0 })
  await refused(t, client.files.create({ file: await toFile(Buffer.from('{}\n'), 'x.jsonl'), purpose: 'fine-tune' }), 400, 'refused', /purpose must be one of batch/)
  await refused(t, client.batches.create({ input_file_id: 'file-nope', endpoint: '/v1/chat/completions', completion_window: '24h' }), 404, 'refused')
  const file = await client.files.create({ file: await toFile(Buffer.from('{}\n'), 'x.jsonl'), purpose: 'batch' })
  await refused(t, client.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '9999h' as '24h' }), 400, 'refused', /completion_window/)
  await refused(t, client.batches.create({ input_file_id: file.id, endpoint: '/v1/moderations' as '/v1/chat/completions', completion_window: '24h' }), 400, 'refused')
  const empty = await client.files.create({ file: await toFile(Buffer.from(''), 'empty.jsonl'), purpose: 'batch' })
  const failed = await finished(client, (await client.batches.create({ input_file_id: empty.id, endpoint: '/v1/chat/completions', completion_window: '24h' })).id)
  t.equal(failed.status, 'failed', 'a file with no request fails the batch')
  t.match(failed.errors, { data: [{ code: 'invalid_input_file', message: /no request/ }] })
})
