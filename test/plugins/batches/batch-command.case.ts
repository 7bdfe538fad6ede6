// `llamagate batch`: a JSONL submitted, watched with a progress bar until over, its results written; status, results,
// list and cancel; bad usage is exit 2 and says why.
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { tempDir } from '../../helpers/app.js'
import { serveRealisticModels } from '../../helpers/inference.js'
import { runCliHere } from '../../helpers/serve-process.js'

t.test('llamagate batch: submit --wait --out, status, results, list, cancel', async (t) => {
  const { url } = await serveRealisticModels(t, { 'acme/chat': 'qwen25' }, { default_options: { num_parallel: 2, ignore_eos: true } })
  const cli = (...args: string[]): ReturnType<typeof runCliHere> => runCliHere([...args, '--host', url])
  const dir = await tempDir(t)
  const input = join(dir, 'requests.jsonl')
  await writeFile(input, Array.from({ length: 6 }, (_, i) => JSON.stringify({ custom_id: `q${i}`, method: 'POST', url: '/v1/chat/completions', body: { model: 'acme/chat', max_tokens: 2, messages: [{ role: 'user', content: `question ${i}` }] } })).join('\n') + '\n')
  const out = join(dir, 'results.jsonl')

  const submitted = await cli('batch', 'submit', input, '--wait', '--out', out)
  t.equal(submitted.code, 0, submitted.stderr)
  t.match(submitted.stderr, /^submitted batch_[0-9a-f]{24} \(\/v1\/chat\/completions, file file-[0-9a-f]+\)\n/, 'the endpoint read from the first line')
  t.match(submitted.stderr, /\ncompleted {3}\[#{30}\] 6\/6\n/, 'the progress bar, full at the end')
  t.match(submitted.stderr, /wrote 6 result lines to .*results\.jsonl\n$/)
  const id = /^(batch_[0-9a-f]{24})/.exec(submitted.stdout)![1]!
  t.match(submitted.stdout, new RegExp(`^${id} {2}completed {2}6/6 done {2}/v1/chat/completions\\n$`), 'then the batch on one line')
  const lines = (await readFile(out, 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as { custom_id: string, response: { status_code: number } })
  t.same(lines.map((l) => l.custom_id).sort(), ['q0', 'q1', 'q2', 'q3', 'q4', 'q5'])

  const status = await cli('batch', 'status', id, '--json')
  t.equal(status.code, 0, status.stderr)
  t.match(JSON.parse(status.stdout), { id, object: 'batch', status: 'completed', request_counts: { total: 6, completed: 6, failed: 0 } })
  const results = await cli('batch', 'results', id)
  t.equal(results.stdout.trim().split('\n').length, 6, 'results to standard output')
  const errors = await cli('batch', 'results', id, '--errors')
  t.equal(errors.code, 0)
  t.match(errors.stderr, /has no error file: nothing failed/)
  const listed = await cli('batch', 'list')
  t.match(listed.stdout, new RegExp(`^${id} {2}completed`, 'm'))
  const cancelled = await cli('batch', 'cancel', id)
  t.match(cancelled.stdout, /completed/, 'a batch that is over stays as it ended')

  const unknown = await cli('batch', 'status', 'batch_000000000000000000000000')
  t.equal(unknown.code, 1, 'an unknown batch: the server\'s 404')
  t.match(unknown.stderr, /no batch with id/)
  const bad = await cli('batch', 'frobnicate', 'x')
  t.equal(bad.code, 2)
  t.match(bad.stderr, /unknown action "frobnicate"/)
  const missing = await cli('batch', 'submit', join(dir, 'nope.jsonl'))
  t.equal(missing.code, 2)
  t.match(missing.stderr, /cannot read .*nope\.jsonl: ENOENT/)
})
