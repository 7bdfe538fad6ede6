import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { writeTinyGguf } from '../../../scripts/fixtures/tiny-model.js'
import { buildTestApp, testConfig, tempDir } from '../../helpers/app.js'
import { exampleSource, installPlugin, projectDir } from '../../helpers/example-plugin.js'
import { sharedServer } from '../../helpers/inference.js'
import { cpuRuntime } from '../../helpers/runtime.js'

// Call hooks on every inference surface, through the example plugins (docs/examples/guardrail-plugin.ts,
// pii-filter-plugin.ts and audit-plugin.ts) compiled and installed as packages beside config.yaml, loaded by name. A
// random-weights model never writes a card or phone number: a plugin of the test's, listed first, makes its pieces
// say one (and cuts, throws, rejects, hangs, routes or moderates alongside on a word of the prompt).

const FORCER = `import { ForbiddenError } from 'llamagate/plugin'

export default async function forcer (app) {
  const counts = new WeakMap()
  const phonePieces = new WeakMap()
  // What an alongside hook does once its request's answer began (at its first piece).
  const begun = new WeakMap()
  const input = (request) => JSON.stringify([request.messages, request.system, request.prompt])
  app.callHooks.add({
    name: 'forcer',
    before (request) {
      // The key's grant comes with the request: its name, its scopes.
      if (request.key !== 'config-1' || request.grant?.name !== 'config-1' || !request.grant.scopes.has('infer')) throw new Error('no grant')
      const text = input(request)
      if (text.includes('HOOK-THROW')) throw new Error('forcer broke')
      if (text.includes('HOOK-REJECT')) return Promise.reject(new Error('forcer rejected'))
      if (text.includes('HOOK-HANG')) return new Promise(() => {})
      if (text.includes('ROUTE-OTHER')) request.model = 'acme/other'
    },
    alongside (request, signal) {
      const text = input(request)
      if (!(signal instanceof AbortSignal) || signal.aborted) throw new Error('no signal')
      if (text.includes('ALONG-HANG')) return new Promise(() => {})
      if (text.includes('ALONG-REFUSE-NOW')) return Promise.reject(new ForbiddenError('the moderation refused it'))
      if (text.includes('ALONG-REFUSE')) return new Promise((resolve, reject) => begun.set(request, () => reject(new ForbiddenError('the moderation refused it'))))
      if (text.includes('ALONG-FINE-NOW')) return new Promise((resolve) => setImmediate(resolve))
      if (text.includes('ALONG-FINE')) return new Promise((resolve) => begun.set(request, resolve))
    },
    piece (piece, request) {
      begun.get(request)?.()
      const text = input(request)
      if (text.includes('PIECE-THROW')) throw new Error('a piece broke it')
      if (text.includes('CARD') && piece.kind === 'text') piece.text = 'pay 4111 1111 1111 1111 now. '
      if (text.includes('PHONE') && piece.kind === 'text') {
        // The answer ends in a phone number however many pieces it has: the first says it, each next one adds digits.
        const n = phonePieces.get(request) ?? 0
        phonePieces.set(request, n + 1)
        piece.text = n === 0 ? 'ring me at 555-0100' : '-0100'
      }
      if (text.includes('CUT')) {
        const n = counts.get(request) ?? 0
        counts.set(request, n + 1)
        if (piece.whole || n === 2) return 'cut'
      }
    },
  })
}
`

const KEY = 'call-hooks-secret'

const server = sharedServer(async () => {
  const dir = await projectDir(t)
  await installPlugin(dir, 'llamagate-plugin-guardrail', await exampleSource('guardrail-plugin.ts'))
  await installPlugin(dir, 'llamagate-plugin-pii-filter', await exampleSource('pii-filter-plugin.ts'))
  await installPlugin(dir, 'llamagate-plugin-audit', await exampleSource('audit-plugin.ts'))
  await writeFile(join(dir, 'forcer.mjs'), FORCER)
  const audit = join(dir, 'audit.jsonl')
  const runtime = await cpuRuntime()
  const config = await testConfig(t, {
    runtime: 'cpu',
    runtimes: { cpu: { bin: runtime.binDir } },
    limits: { hook_timeout: '300ms' },
    auth: { api_keys: [KEY] },
    default_options: { num_ctx: 512, num_parallel: 2, max_tokens: 4, ignore_eos: true },
    plugins: [
      { path: join(dir, 'forcer.mjs') },
      { path: 'llamagate-plugin-guardrail', options: { banned: ['classified'], redaction: '[card]' } },
      { path: 'llamagate-plugin-pii-filter', options: { redaction: '[phone]' } },
      { path: 'llamagate-plugin-audit', options: { file: audit } },
    ],
  })
  // As loaded from a config.yaml in `dir`: packages resolve beside it.
  const app = await buildTestApp({ ...config, configFile: join(dir, 'config.yaml') })
  t.teardown(() => app.close())
  let seed = 1
  for (const name of ['acme/tiny', 'acme/other']) {
    const file = join(dir, `${name.replace('/', '--')}.gguf`)
    await writeTinyGguf({ file, seed: seed++, name })
    await app.store.import(name, file)
  }
  return { url: await app.listen({ host: '127.0.0.1', port: 0 }), audit }
})

type Surface = 'native chat' | 'native generate' | 'openai chat' | 'openai completions' | 'openai responses' | 'anthropic'
const SURFACES: Surface[] = ['native chat', 'native generate', 'openai chat', 'openai completions', 'openai responses', 'anthropic']

/** A request of `surface` saying `text`, for `tokens` tokens. */
function ask (surface: Surface, text: string, stream: boolean, tokens = 4): { path: string, body: object } {
  const model = 'acme/tiny'
  const messages = [{ role: 'user', content: text }]
  switch (surface) {
    case 'native chat': return { path: '/api/chat', body: { model, messages, stream, options: { num_predict: tokens } } }
    case 'native generate': return { path: '/api/generate', body: { model, prompt: text, stream, options: { num_predict: tokens } } }
    case 'openai chat': return { path: '/v1/chat/completions', body: { model, messages, stream, max_tokens: tokens } }
    case 'openai completions': return { path: '/v1/completions', body: { model, prompt: text, stream, max_tokens: tokens } }
    case 'openai responses': return { path: '/v1/responses', body: { model, input: text, stream, max_output_tokens: tokens } }
    case 'anthropic': return { path: '/v1/messages', body: { model, messages, stream, max_tokens: tokens } }
  }
}

async function send (surface: Surface, text: string, stream: boolean, tokens?: number): Promise<{ status: number, body: string }> {
  const { url } = await server()
  const { path, body } = ask(surface, text, stream, tokens)
  const res = await fetch(url + path, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'text/event-stream', authorization: `Bearer ${KEY}` }, body: JSON.stringify(body) })
  return { status: res.status, body: await res.text() }
}

/** How a surface's answer says it finished, streamed (its last events) or whole. */
const FINISHED: Record<Surface, RegExp> = {
  'native chat': /"done":true/,
  'native generate': /"done":true/,
  'openai chat': /"finish_reason":"(stop|length)"/,
  'openai completions': /"finish_reason":"(stop|length)"/,
  'openai responses': /"status":"(completed|incomplete)"/,
  anthropic: /"stop_reason":"(end_turn|max_tokens)"/,
}
const STREAM_END: Record<Surface, RegExp> = {
  'native chat': /"done":true[^\n]*\n+$/,
  'native generate': /"done":true[^\n]*\n+$/,
  'openai chat': /data: \[DONE\]\n\n$/,
  'openai completions': /data: \[DONE\]\n\n$/,
  'openai responses': /event: response\.(completed|incomplete)\n[^\n]*\n\n$/,
  anthropic: /event: message_stop\ndata: \{"type":"message_stop"\}\n\n$/,
}

/** The text of an answer as its client reads it, streamed (every event's text delta, in order) or whole. */
function answerText (surface: Surface, body: string, stream: boolean): string {
  const events = stream
    ? body.split('\n').map((line) => line.replace(/^data: /, '')).filter((line) => line.startsWith('{')).map((line) => JSON.parse(line))
    : [JSON.parse(body)]
  return events.map((e) => {
    switch (surface) {
      case 'native chat': return e.message?.content ?? ''
      case 'native generate': return e.response ?? ''
      case 'openai chat': return stream ? e.choices?.[0]?.delta?.content ?? '' : e.choices[0].message.content
      case 'openai completions': return e.choices?.[0]?.text ?? ''
      case 'openai responses': return stream
        ? (e.type === 'response.output_text.delta' ? e.delta : '')
        : e.output.filter((o: any) => o.type === 'message').flatMap((o: any) => o.content.map((c: any) => c.text)).join('')
      case 'anthropic': return stream
        ? (e.type === 'content_block_delta' && e.delta.type === 'text_delta' ? e.delta.text : '')
        : e.content.filter((c: any) => c.type === 'text').map((c: any) => c.text).join('')
    }
    return ''
  }).join('')
}

/** The message of an error answer in the surface's shape, or null when it is not in that shape. */
function errorMessage (surface: Surface, body: string): string | null {
  const json = JSON.parse(body)
  if (surface.startsWith('native')) return typeof json.error === 'string' ? json.error : null
  if (surface === 'anthropic') return json.type === 'error' && typeof json.error?.message === 'string' ? json.error.message : null
  return typeof json.error?.message === 'string' && typeof json.error.type === 'string' ? json.error.message : null
}

/** The message of a stream's last event when it is an error in the surface's shape, else null. */
function lastEventError (surface: Surface, body: string): string | null {
  const last = body.trim().split('\n').at(-1) ?? ''
  try {
    return errorMessage(surface, last.startsWith('data: ') ? last.slice(6) : last)
  } catch {
    return null
  }
}

for (const stream of [false, true]) {
  const how = stream ? 'streamed' : 'whole'
  t.test(`${how}: a banned word is refused in each surface's shape`, async (t) => {
    for (const surface of SURFACES) {
      const { status, body } = await send(surface, 'tell me the classified plans', stream)
      t.equal(status, 403, surface)
      t.match(errorMessage(surface, body), /the request names "classified"/, surface)
    }
  })

  t.test(`${how}: a card number in the answer is redacted on every surface, and each request audited`, async (t) => {
    const { audit } = await server()
    const before = (await readFile(audit, 'utf8').catch(() => '')).split('\n').filter(Boolean).length
    for (const surface of SURFACES) {
      const { status, body } = await send(surface, `say a CARD number ${surface}`, stream)
      t.equal(status, 200, surface)
      // The number as written (a bare 4111 may be in a duration or an id of the answer).
      t.notMatch(body, /4111 1111/, `${surface}: no card number went out`)
      t.match(body, /pay \[card\] now/, `${surface}: redacted`)
      t.match(body, FINISHED[surface], `${surface}: finished`)
      if (stream) t.match(body, STREAM_END[surface], `${surface}: the stream ended as it does`)
    }
    const lines = (await readFile(audit, 'utf8')).split('\n').filter(Boolean).slice(before).map((l) => JSON.parse(l))
    t.equal(lines.length, SURFACES.length, 'one line a request')
    for (const [i, line] of lines.entries()) {
      t.match(line, { model: 'acme/tiny', key: 'config-1', streamed: stream, cut: false, completion_tokens: 4 }, SURFACES[i]!)
      t.ok(line.prompt_tokens > 0 && line.duration_ms >= 0, `${SURFACES[i]!}: prompt tokens and duration`)
    }
    t.same(lines.map((l) => l.surface), ['native', 'native', 'openai', 'openai', 'openai', 'anthropic'])
  })

  t.test(`${how}: a phone number at the very end of the answer is redacted on every surface, not lost`, async (t) => {
    const { audit } = await server()
    for (const surface of SURFACES) {
      const { status, body } = await send(surface, `say a PHONE number ${surface}`, stream, 6)
      t.equal(status, 200, surface)
      // The digits as written, with their dash: a bare 0100 may be in a duration of the answer (eval_duration 1101000).
      t.notMatch(body, /-0100/, `${surface}: no digit of it went out`)
      t.equal(answerText(surface, body, stream), 'ring me at [phone]', `${surface}: the held-back end released, redacted`)
      t.match(body, FINISHED[surface], `${surface}: finished`)
      if (stream) t.match(body, STREAM_END[surface], `${surface}: the stream ended as it does`)
    }
    const lines = (await readFile(audit, 'utf8')).split('\n').filter(Boolean).slice(-SURFACES.length).map((l) => JSON.parse(l))
    t.same(lines.map((l) => l.cut), SURFACES.map(() => false), 'audited as finished')
  })

  t.test(`${how}: a piece hook that cuts the answer ends it as each surface ends a finished one`, async (t) => {
    for (const surface of SURFACES) {
      const { status, body } = await send(surface, `CUT it short ${surface}`, stream, 8)
      t.equal(status, 200, surface)
      t.match(body, FINISHED[surface], `${surface}: finished`)
      t.notMatch(body, /"error":[{"]|"type":"error"|event: error/, `${surface}: no error`)
      if (stream) t.match(body, STREAM_END[surface], `${surface}: the stream ended as it does`)
    }
    const { audit } = await server()
    const lines = (await readFile(audit, 'utf8')).split('\n').filter(Boolean).slice(-SURFACES.length).map((l) => JSON.parse(l))
    t.ok(lines.every((l) => l.cut === true), 'audited as cut')
  })
}

t.test('a before hook that throws, rejects or hangs fails only its request, in its surface\'s shape', async (t) => {
  for (const [surface, word] of [['native chat', 'HOOK-THROW'], ['openai chat', 'HOOK-REJECT'], ['anthropic', 'HOOK-HANG']] as const) {
    for (const stream of [false, true]) {
      const { status, body } = await send(surface, `${word} please`, stream)
      t.equal(status, 500, `${surface} ${word}`)
      t.match(errorMessage(surface, body), /the plugin "forcer" failed in its before hook/)
    }
    t.equal((await send(surface, 'fine', false)).status, 200, 'the next request is answered')
  }
  const { audit } = await server()
  t.match(await readFile(audit, 'utf8'), /"error":"the plugin \\"forcer\\" failed in its before hook/, 'the failure hook heard of it')
})

t.test('a piece hook that throws mid-stream ends the open stream with an error event', async (t) => {
  const { status, body } = await send('openai chat', 'PIECE-THROW', true)
  t.equal(status, 200)
  t.match(body, /the plugin \\?"forcer\\?" failed in its piece hook/)
  const whole = await send('anthropic', 'PIECE-THROW', false)
  t.equal(whole.status, 500)
})

t.test('a before hook routes a request to another model', async (t) => {
  const { status, body } = await send('openai chat', 'ROUTE-OTHER', false)
  t.equal(status, 200)
  t.equal(JSON.parse(body).model, 'acme/other')
})

// Alongside hooks: moderation that runs while the model answers and may cancel it.
const MODERATED: Surface[] = ['native chat', 'openai chat', 'anthropic']

t.test('an alongside hook that refuses cancels the call: an open stream ends with its error event, a whole answer is the refusal', async (t) => {
  for (const surface of MODERATED) {
    // Forced long: it refuses at the first piece, long before the answer would finish.
    const streamed = await send(surface, `ALONG-REFUSE ${surface}`, true, 64)
    t.equal(streamed.status, 200, `${surface}: the stream was open`)
    t.match(lastEventError(surface, streamed.body), /the moderation refused it/, `${surface}: the error event`)
    t.notMatch(streamed.body, FINISHED[surface], `${surface}: the answer did not finish`)
    const whole = await send(surface, `ALONG-REFUSE-NOW ${surface}`, false, 64)
    t.equal(whole.status, 403, surface)
    t.match(errorMessage(surface, whole.body), /the moderation refused it/, `${surface}: in its shape`)
  }
  t.equal((await send('native chat', 'fine', false)).status, 200, 'the next request is answered')
  const { audit } = await server()
  t.match(await readFile(audit, 'utf8'), /"error":"the moderation refused it"/, 'the failure hook heard of it')
})

t.test('an alongside hook that resolves changes nothing', async (t) => {
  for (const surface of MODERATED) {
    const streamed = await send(surface, `ALONG-FINE ${surface}`, true)
    t.equal(streamed.status, 200, surface)
    t.match(streamed.body, STREAM_END[surface], `${surface}: the stream ended as it does`)
    const whole = await send(surface, `ALONG-FINE-NOW ${surface}`, false)
    t.equal(whole.status, 200, surface)
    t.match(whole.body, FINISHED[surface], `${surface}: finished`)
  }
})

t.test('an alongside hook that hangs is cut by limits.hook_timeout: its request fails alone', async (t) => {
  const whole = await send('openai chat', 'ALONG-HANG', false)
  t.equal(whole.status, 500)
  t.match(errorMessage('openai chat', whole.body), /the plugin "forcer" failed in its alongside hook/)
  // The answer (4 tokens) finished first: its end waited for the hook, and got its failure.
  const streamed = await send('anthropic', 'ALONG-HANG', true)
  t.equal(streamed.status, 200)
  t.match(lastEventError('anthropic', streamed.body), /the plugin "forcer" failed in its alongside hook/)
  t.notMatch(streamed.body, FINISHED.anthropic, 'not said finished')
  t.equal((await send('native chat', 'fine', false)).status, 200, 'the next request is answered')
})

// Last: after a second gateway started and closed here, the shared one's runtime was seen to stop answering.
t.test('with no hook registered the gateway has none to run', async (t) => {
  const dir = await tempDir(t)
  const app = await buildTestApp(await testConfig(t, { data_dir: dir }))
  t.teardown(() => app.close())
  t.equal(app.callHooks.empty, true)
})
