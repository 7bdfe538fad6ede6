// Anthropic's Message Batches through the official SDK, unconfigured beyond its base URL and key: create, retrieve,
// results (JSONL, one line per custom_id), cancel; on the machinery of OpenAI's Batch API.
import Anthropic from '@anthropic-ai/sdk'
import t from 'tap'
import { serveRealisticModels } from '../../helpers/inference.js'
import { until } from '../../helpers/until.js'

const params = (content: string, maxTokens = 3): Anthropic.Messages.MessageCreateParamsNonStreaming =>
  ({ model: 'acme/chat', max_tokens: maxTokens, messages: [{ role: 'user', content }] })

t.test('messages.batches: create, retrieve until ended, results per custom_id; cancel accounts for every request', async (t) => {
  const { url } = await serveRealisticModels(t, { 'acme/chat': 'qwen25' }, { default_options: { num_parallel: 1, ignore_eos: true } })
  const client = new Anthropic({ baseURL: url, apiKey: 'unused', maxRetries: 0 })
  const created = await client.messages.batches.create({
    requests: [
      { custom_id: 'a', params: params('one') },
      { custom_id: 'b', params: params('two') },
      { custom_id: 'c', params: { ...params('three'), model: 'acme/missing' } },
    ],
  })
  t.match(created, { id: /^msgbatch_/, type: 'message_batch', processing_status: 'in_progress', archived_at: null })
  const ended = await until('the batch ended', async () => {
    const batch = await client.messages.batches.retrieve(created.id)
    return batch.processing_status === 'ended' ? batch : null
  }, 60_000, 100)
  t.match(ended.request_counts, { processing: 0, succeeded: 2, errored: 1 })
  t.ok(ended.results_url !== null && ended.ended_at !== null)
  const results: Anthropic.Messages.Batches.MessageBatchIndividualResponse[] = []
  for await (const result of await client.messages.batches.results(created.id)) results.push(result)
  t.same(results.map((r) => r.custom_id).sort(), ['a', 'b', 'c'], 'one result per request')
  for (const id of ['a', 'b']) {
    t.match(results.find((r) => r.custom_id === id)!.result, { type: 'succeeded', message: { type: 'message', role: 'assistant', model: 'acme/chat', usage: { output_tokens: 3 } } })
  }
  t.match(results.find((r) => r.custom_id === 'c')!.result, { type: 'errored', error: { type: 'error', error: { type: 'not_found_error' } } }, 'a request that failed says why, in Anthropic\'s shape')
  t.ok((await client.messages.batches.list()).data.some((b) => b.id === created.id), 'listed')

  const many = await client.messages.batches.create({ requests: Array.from({ length: 12 }, (_, i) => ({ custom_id: `m${i}`, params: params(`request ${i}`, 128) })) })
  await until('a first answer', async () => (await client.messages.batches.retrieve(many.id)).request_counts.succeeded > 0, 60_000, 50)
  const canceling = await client.messages.batches.cancel(many.id)
  t.ok(['canceling', 'ended'].includes(canceling.processing_status), `canceling (${canceling.processing_status})`)
  await until('the cancelled batch ended', async () => (await client.messages.batches.retrieve(many.id)).processing_status === 'ended', 60_000, 100)
  const cut: Anthropic.Messages.Batches.MessageBatchIndividualResponse[] = []
  for await (const result of await client.messages.batches.results(many.id)) cut.push(result)
  t.equal(new Set(cut.map((r) => r.custom_id)).size, 12, 'every request once')
  t.ok(cut.some((r) => r.result.type === 'canceled'), 'those not run are canceled')
  t.ok(cut.every((r) => r.result.type === 'canceled' || r.result.type === 'succeeded'))
  const missing = await client.messages.batches.retrieve('msgbatch_nope').then(() => null, (e: { status?: number }) => e.status)
  t.equal(missing, 404, 'an unknown batch: 404')
})
