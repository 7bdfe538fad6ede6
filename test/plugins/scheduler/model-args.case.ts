import { readFile } from 'node:fs/promises'
import t from 'tap'
import { post, serveRealisticModels } from '../../helpers/inference.js'

// config.yaml's models.<name>.args on a real llama-server: they reach its command line with model names turned
// into files, and a draft model named that way is really used for speculative decoding.

async function commandLine (pid: number): Promise<string[]> {
  return (await readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0').filter((a) => a !== '')
}

t.test('args reach llama-server, a model named in them becomes its GGUF, and the draft model is used', async (t) => {
  const { app, url } = await serveRealisticModels(t, { 'acme/chat': 'qwen25', 'acme/draft': 'qwen25' }, {
    models: { 'acme/chat': { args: ['--model-draft', 'acme/draft', '--spec-type', 'draft-simple', '--spec-draft-n-max', '4'] } },
  })
  // Greedy: the draft (the same weights here) proposes what the model itself would say, so its tokens are accepted.
  const res = await post(`${url}/v1/chat/completions`, { model: 'acme/chat', messages: [{ role: 'user', content: 'Count with me' }], max_tokens: 24, temperature: 0, ignore_eos: true })
  const body = await res.json() as { timings?: { draft_n?: number, draft_n_accepted?: number }, usage: { completion_tokens: number } }
  t.equal(res.status, 200, JSON.stringify(body).slice(0, 2000))
  t.ok((body.timings?.draft_n ?? 0) > 0, `llama-server drafted tokens: ${JSON.stringify(body.timings)}`)
  t.ok((body.timings?.draft_n_accepted ?? 0) > 0, 'and accepted some')

  const [loaded] = app.scheduler.snapshot()
  const args = await commandLine(loaded!.pid!)
  const draftFile = app.store.ggufPath(app.store.get('acme/draft'))
  const at = args.indexOf('--model-draft')
  t.ok(at > 0, `--model-draft on the command line: ${args.join(' ')}`)
  t.equal(args[at + 1], draftFile, 'naming the draft model\'s GGUF in the store')
  t.same(args.slice(at, at + 6), ['--model-draft', draftFile, '--spec-type', 'draft-simple', '--spec-draft-n-max', '4'], 'the rest as written')
  t.equal(args.filter((a) => a === '--port').length, 1, 'the gateway\'s own flags once, its own')
})

t.test('a name in args that is neither a local model nor a file: the request fails with the config key to fix', async (t) => {
  const { url } = await serveRealisticModels(t, { 'acme/chat': 'qwen25' }, {
    models: { 'acme/chat': { args: ['--model-draft', 'acme/missing'] } },
  })
  const res = await post(`${url}/api/chat`, { model: 'acme/chat', stream: false, messages: [{ role: 'user', content: 'hi' }] })
  t.equal(res.status, 500)
  t.same(await res.json(), { error: 'config.yaml models.acme/chat.args names "acme/missing", which is neither a local model nor a file path (paths start with /, ./ or ~, or end in .gguf)' })
  const missingFile = await serveRealisticModels(t, { 'acme/chat': 'qwen25' }, {
    models: { 'acme/chat': { args: ['--lora', '/nowhere/adapter.gguf'] } },
  })
  const res2 = await post(`${missingFile.url}/api/chat`, { model: 'acme/chat', stream: false, messages: [{ role: 'user', content: 'hi' }] })
  t.equal(res2.status, 500)
  t.match(await res2.json(), { error: /names "\/nowhere\/adapter\.gguf", and there is no such file/ })
})
