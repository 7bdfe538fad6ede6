// A batch survives its gateway: `llamagate serve` SIGKILLed twice during a 200-request batch and started again each
// time on the same data folder finishes it with exactly 200 result lines, one per custom_id, none twice and none
// half-written. A partial last line (a crash mid-append) is cut off when the batch is read back.
import { appendFile, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { BatchStore } from '../../../plugins/batches/batch-store.js'
import { writeTinyGguf } from '../../../scripts/fixtures/tiny-model.js'
import { tempDir } from '../../helpers/app.js'
import { cpuRuntime } from '../../helpers/runtime.js'
import { runCliHere, startServe, type ServeProcess } from '../../helpers/serve-process.js'
import { until } from '../../helpers/until.js'

const REQUESTS = 200

t.test('SIGKILLed twice mid-batch and started again: 200 requests, 200 result lines, one per custom_id', async (t) => {
  const dir = await tempDir(t)
  const models = join(dir, 'models')
  const importConfig = join(dir, 'import.yaml')
  await writeFile(importConfig, `data_dir: ${join(dir, 'import-data')}\n`)
  const model = (await writeTinyGguf({ file: join(dir, 'tiny.gguf') })).file
  const imported = await runCliHere(['import', 'acme/tiny', model, '--config', importConfig, '--models', models])
  t.equal(imported.code, 0, imported.stderr)
  const config = join(dir, 'config.yaml')
  const runtime = await cpuRuntime()
  await writeFile(config, `data_dir: ${join(dir, 'data')}\nmodels_dir: ${models}\nport: 0\nlog_level: info\nruntimes:\n  cpu: { bin: ${runtime.binDir} }\n` +
    'default_options: { num_ctx: 512, num_parallel: 2, num_thread: 1, ignore_eos: true }\n')
  const servers: ServeProcess[] = []
  t.teardown(() => { for (const s of servers) s.child.kill('SIGKILL') })
  const serve = async (): Promise<ServeProcess> => {
    const started = await startServe(['--config', config], {}, 60_000)
    servers.push(started)
    return started
  }

  let gateway = await serve()
  const lines = Array.from({ length: REQUESTS }, (_, i) => JSON.stringify({ custom_id: `req-${i}`, method: 'POST', url: '/v1/completions', body: { model: 'acme/tiny', prompt: `request ${i}`, max_tokens: 8 } }))
  const form = new FormData()
  form.append('purpose', 'batch')
  form.append('file', new Blob([lines.join('\n') + '\n']), 'input.jsonl')
  const file = await (await fetch(`${gateway.address}/v1/files`, { method: 'POST', body: form })).json() as { id: string }
  const created = await (await fetch(`${gateway.address}/v1/batches`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ input_file_id: file.id, endpoint: '/v1/completions', completion_window: '24h' }) })).json() as { id: string }
  const batch = async (): Promise<{ status: string, request_counts: { total: number, completed: number, failed: number }, output_file_id: string | null, error_file_id: string | null }> =>
    await (await fetch(`${gateway.address}/v1/batches/${created.id}`)).json() as never

  for (const [kill, atLeast] of [[1, 30], [2, 100]] as const) {
    const before = await until(`${atLeast} answered`, async () => { const b = await batch(); return b.request_counts.completed >= atLeast ? b : null }, 120_000, 20)
    gateway.child.kill('SIGKILL')
    await gateway.exited
    t.ok(before.request_counts.completed < REQUESTS, `killed mid-batch (kill ${kill}: ${before.request_counts.completed} of ${REQUESTS} answered)`)
    gateway = await serve()
    const after = await batch()
    t.ok(after.request_counts.completed >= before.request_counts.completed, `started again: the batch goes on from ${after.request_counts.completed}, nothing answered is lost`)
  }
  const done = await until('the batch completed', async () => { const b = await batch(); return b.status === 'completed' ? b : null }, 180_000, 50)
  t.same(done.request_counts, { total: REQUESTS, completed: REQUESTS, failed: 0 })
  t.equal(done.error_file_id, null, 'no request failed')
  const text = await (await fetch(`${gateway.address}/v1/files/${done.output_file_id}/content`)).text()
  t.ok(text.endsWith('\n'), 'whole lines')
  const results = text.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as { custom_id: string, response: { status_code: number } })
  t.equal(results.length, REQUESTS, 'exactly 200 result lines')
  t.equal(new Set(results.map((r) => r.custom_id)).size, REQUESTS, 'one per custom_id: none twice')
  t.ok(results.every((r) => r.response.status_code === 200), 'each an answer')
})

t.test('a partial last line left by a crash mid-append is cut off; its request has no answer yet', async (t) => {
  const dir = await tempDir(t)
  const store = new BatchStore(dir)
  const id = BatchStore.newId()
  const input = join(dir, 'in.jsonl')
  await writeFile(input, '{}\n')
  const record = { batch: { id, status: 'in_progress', created_at: 1 } as never, owner: null, grant: null, api: 'openai' as const }
  await store.create(record, input)
  await store.append(id, 'output', { custom_id: 'a', response: { status_code: 200 } })
  await appendFile(store.resultPath(id, 'output'), '{"custom_id":"b","respo')
  const [loaded] = await store.load()
  t.same([...loaded!.done], ['a'], 'only the whole line counts')
  t.equal(loaded!.lines.output, 1)
  t.equal(await readFile(store.resultPath(id, 'output'), 'utf8'), '{"custom_id":"a","response":{"status_code":200}}\n', 'the partial line is gone from the file')
})
