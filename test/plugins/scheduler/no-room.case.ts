import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { isAlive } from '../../../core/base/process-alive.js'
import { tempDir } from '../../helpers/app.js'
import { firstEvent, importLongContextModel, post, serveTinyModels } from '../../helpers/inference.js'
import { until } from '../../helpers/until.js'
import { lowPriorityWhileHeld } from '../../helpers/held-priority.js'

// limits.max_loaded_models and limits.load_timeout (config.yaml: "How long a model may take to load (or a
// request may wait for room) before the request fails"); docs/api.md: "503 ... no room to load".


const NO_ROOM = /no room to load "acme\/b": 1 model\(s\) loaded and busy \(limits\.max_loaded_models is 1\); waited 4 s/

t.test('no room: with max_loaded_models 1 and a busy model, another model\'s request waits load_timeout, then 503 on every surface', async (t) => {
  const { app, url } = await serveTinyModels(t, ['acme/b'], {
    limits: { max_loaded_models: 1, load_timeout: '4s' },
    default_options: { num_thread: 1, num_ctx: 32_768, num_parallel: 1 },
  })
  // Busy for longer than the timeout on any machine: the tiny model's own 2048-token training context would end a
  // generation in well under a second when the machine is quiet.
  await importLongContextModel(t, app, 'acme/a')
  const holder = new AbortController()
  const holding = await post(`${url}/api/chat`, { model: 'acme/a', messages: [{ role: 'user', content: 'go on' }], options: { max_tokens: 32_000 } }, {}, holder.signal)
  t.equal(holding.status, 200)
  const first = await firstEvent(holding) // acme/a is loaded and busy
  const restoreHolder = await lowPriorityWhileHeld(t, url, 'acme/a')
  const message = [{ role: 'user', content: 'hi' }]
  const started = Date.now()
  const timed = async (request: Promise<Response>): Promise<{ res: Response, ms: number }> => { const res = await request; return { res, ms: Date.now() - started } }
  const [chat, streamed, openai, anthropic] = await Promise.all([
    timed(post(`${url}/api/chat`, { model: 'acme/b', messages: message, stream: false, options: { max_tokens: 2 } })),
    timed(post(`${url}/api/generate`, { model: 'acme/b', prompt: 'hi', options: { max_tokens: 2 } })),
    timed(post(`${url}/v1/chat/completions`, { model: 'acme/b', messages: message, max_tokens: 2 })),
    timed(post(`${url}/v1/messages`, { model: 'acme/b', messages: message, max_tokens: 2 })),
  ])
  for (const [what, { res, ms }] of Object.entries({ chat, openai, anthropic })) {
    t.equal(res.status, 503, `${what}: 503`)
    t.ok(ms >= 3900 && ms < 12_000, `${what}: answered after the 4 s load_timeout (${ms} ms)`)
  }
  t.match(await chat.res.json(), { error: NO_ROOM }, '/api/chat: the native shape, with the reason')
  // A streamed request that waits says so after two seconds (progress comments), so its head is out: the 503 is its last event.
  t.equal(streamed.res.status, 200, 'streamed: the head went out with the first progress comment')
  // Told by the wait's own end (the others' 503s, at the same deadline), which a slow machine delays as well.
  const waitEnded = Math.min(chat.ms, openai.ms, anthropic.ms)
  t.ok(streamed.ms < waitEnded - 1000, `streamed: the head came after two seconds (${streamed.ms} ms), not after the whole wait (${waitEnded} ms)`)
  t.match(streamed.res.headers.get('content-type'), /text\/event-stream/)
  const text = await streamed.res.text()
  t.match(text, /^: waiting: /, 'progress first')
  const events = text.split('\n').filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6)) as unknown)
  t.match(events, [{ error: NO_ROOM }], 'then one event: the error, with the reason (no answer)')
  t.match(await openai.res.json(), { error: { message: NO_ROOM, type: 'server_error' } }, '/v1: OpenAI\'s shape, server_error')
  t.match(await anthropic.res.json(), { type: 'error', error: { type: 'overloaded_error', message: NO_ROOM } }, '/v1/messages: Anthropic\'s overloaded_error')
  t.match(await first.next(), /^data: \{"model":"acme\/a".*"done":false\}/, 'the busy model\'s generation still streams: the 503s cut nothing')
  restoreHolder()
  holder.abort()
  await first.rest().catch(() => {})
  const after = await post(`${url}/api/chat`, { model: 'acme/b', messages: message, stream: false, options: { max_tokens: 2 } })
  t.equal(after.status, 200, 'once acme/a is idle, acme/b loads (acme/a evicted)')
  const ps = ((await (await fetch(`${url}/api/ps`)).json()) as { models: Array<{ name: string }> }).models.map((m) => m.name)
  t.same(ps, ['acme/b'])
})

t.test('load_timeout bounds the load itself: a runtime that never becomes ready fails the request after it', async (t) => {
  // A llama-server that answers the build probes but, started for a model, never listens.
  const bin = await tempDir(t, 'llamagate-never-ready-')
  const pids = join(bin, 'pids')
  await writeFile(join(bin, 'llama-server'), [
    '#!/bin/sh',
    'case "$1" in',
    '  --version) echo "version: 9.9.9-never-ready (build 7, commit f00ba47)" >&2; exit 0 ;;',
    '  --help) echo "--jinja  --no-webui  --no-warmup"; exit 0 ;;',
    '  --list-devices) echo "Available devices:"; exit 0 ;;',
    'esac',
    `echo $$ >> ${pids}`,
    'exec sleep 600',
    '',
  ].join('\n'), { mode: 0o755 })
  const { app, url } = await serveTinyModels(t, ['acme/slow'], {
    runtimes: { cpu: { bin } },
    limits: { load_timeout: '4s' },
    default_options: { num_thread: 1, num_ctx: 256, num_parallel: 1 },
  })
  const started = Date.now()
  let res: Response | null = null
  try {
    res = await post(`${url}/api/generate`, { model: 'acme/slow', prompt: 'hi', stream: false }, {}, AbortSignal.timeout(20_000))
  } catch (err) {
    t.fail(`no answer within 20 s although limits.load_timeout is 4 s (${(err as Error).name}): the load is not bounded by load_timeout`)
  }
  if (res !== null) {
    const ms = Date.now() - started
    t.ok(ms >= 3900 && ms < 12_000, `failed after about the 4 s load_timeout (${ms} ms)`)
    t.ok(res.status === 502 || res.status === 503 || res.status === 504, `a 5xx (${res.status})`)
    t.match(await res.json(), { error: /acme\/slow/ }, 'naming the model')
  }
  // Streamed, the same load says it is loading once it has waited two seconds, then ends with the failure as its event
  // (another num_ctx: the failed start's backoff is per set of load options, and would answer this one at once).
  const streamed = await (await post(`${url}/api/generate`, { model: 'acme/slow', prompt: 'hi', options: { num_ctx: 128 } }, { accept: 'text/event-stream' }, AbortSignal.timeout(20_000))).text()
  t.match(streamed, /^: waiting: loading acme\/slow \(2\.\d s\)\n\n/, 'streamed: the load\'s progress first, as an SSE comment')
  const events = streamed.split('\n').filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6)) as unknown)
  t.match(events, [{ error: /acme\/slow/ }], 'then the failure as its one event')
  // Whatever happened, the stand-in must not outlive the gateway.
  const started_pids = (await readFile(pids, 'utf8').catch(() => '')).split('\n').filter(Boolean).map(Number)
  t.ok(started_pids.length > 0, 'the stand-in llama-server was started')
  await app.close()
  await until('the stand-in llama-server to be gone', async () => started_pids.every((pid) => !isAlive(pid)), 5000)
  t.pass('no stand-in left after close')
})
