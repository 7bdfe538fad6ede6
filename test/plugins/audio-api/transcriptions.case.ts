import OpenAI, { toFile } from 'openai'
import t from 'tap'
import { audioTokens, tinyWav } from '../../../scripts/fixtures/realistic-audio-projector.js'
import { serveRealisticModels, sharedServer } from '../../helpers/inference.js'

// OpenAI's /v1/audio/transcriptions on a model with an audio projector (the tiny Ultravox-style one beside the tiny
// qwen2 chat model), through the official client and raw forms: the answer's shapes, the stream's events, what the
// audio costs in prompt tokens, and every refusal in OpenAI's shape.

const served = sharedServer(() => serveRealisticModels(t, {
  'acme/hears': { kind: 'qwen25', projector: 'audio' },
  'acme/sees': { kind: 'qwen25', projector: true },
  'acme/text': 'qwen25',
}))

const WAV = tinyWav(1)

async function form (url: string, fields: Record<string, string>, file: Buffer | null = WAV, path = '/v1/audio/transcriptions'): Promise<{ status: number, type: string, body: any, text: string }> {
  const data = new FormData()
  if (file !== null) data.append('file', new Blob([file], { type: 'audio/wav' }), 'clip.wav')
  for (const [key, value] of Object.entries(fields)) data.append(key, value)
  const res = await fetch(url + path, { method: 'POST', body: data })
  const text = await res.text()
  let body: unknown = null
  try { body = JSON.parse(text) } catch { /* text or events */ }
  return { status: res.status, type: res.headers.get('content-type') ?? '', body, text }
}

t.test('openai\'s audio.transcriptions.create(), unconfigured beyond the base URL: json, text and verbose_json', async (t) => {
  const { url } = await served()
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'unused' })
  const file = await toFile(WAV, 'clip.wav', { type: 'audio/wav' })
  const json = await client.audio.transcriptions.create({ model: 'acme/hears', file, max_tokens: 4 } as never) as unknown as { text: string, usage: Record<string, unknown> }
  t.type(json.text, 'string')
  t.match(json.usage, { type: 'tokens', input_tokens: Number, output_tokens: Number, total_tokens: Number })
  t.ok((json.usage.input_tokens as number) > audioTokens(1), `the audio's ${audioTokens(1)} positions are in the prompt (${String(json.usage.input_tokens)})`)
  t.equal(json.usage.total_tokens, (json.usage.input_tokens as number) + (json.usage.output_tokens as number))
  const text = await client.audio.transcriptions.create({ model: 'acme/hears', file: await toFile(WAV, 'clip.wav'), response_format: 'text', max_tokens: 4 } as never)
  t.type(text, 'string', 'text: the text alone')
  const verbose = await client.audio.transcriptions.create({ model: 'acme/hears', file: await toFile(WAV, 'clip.wav'), response_format: 'verbose_json', language: 'en', max_tokens: 4 } as never) as unknown as Record<string, unknown>
  t.match(verbose, { task: 'transcribe', language: 'en', text: String })
  t.ok(Math.abs((verbose.duration as number) - 1) < 1e-6, `the WAV's length, from its header (${String(verbose.duration)})`)
})

t.test('streamed: transcript.text.delta events, then one transcript.text.done with the whole text and the usage', async (t) => {
  const { url } = await served()
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'unused' })
  const stream = await client.audio.transcriptions.create({ model: 'acme/hears', file: await toFile(WAV, 'clip.wav'), stream: true, max_tokens: 5 } as never) as unknown as AsyncIterable<Record<string, unknown>>
  const events: Array<Record<string, unknown>> = []
  for await (const event of stream) events.push(event)
  const deltas = events.filter((e) => e.type === 'transcript.text.delta')
  const done = events.filter((e) => e.type === 'transcript.text.done')
  t.ok(deltas.length > 0, 'deltas came')
  t.equal(done.length, 1)
  t.equal(events.at(-1), done[0], 'done is the last event')
  t.equal(done[0]!.text, deltas.map((d) => d.delta).join(''), 'its text is the deltas joined')
  t.match(done[0]!.usage, { type: 'tokens', output_tokens: 5 })
})

t.test('llama-server\'s own path, /audio/transcriptions, answers as /v1 does', async (t) => {
  const { url } = await served()
  const res = await form(url, { model: 'acme/hears', max_tokens: '2' }, WAV, '/audio/transcriptions')
  t.equal(res.status, 200, res.text)
  t.match(res.body, { text: String, usage: { type: 'tokens' } })
})

t.test('refusals, each in OpenAI\'s shape: no file, a file that is not audio, a model that does not hear, bad fields', async (t) => {
  const { url } = await served()
  const cases: Array<[string, Record<string, string>, Buffer | null, number, RegExp, string | null]> = [
    ['no file', { model: 'acme/hears' }, null, 400, /"file" field of a multipart\/form-data body/, 'invalid_request'],
    ['not audio', { model: 'acme/hears' }, Buffer.from('just some text, not a sound'), 400, /the file is not WAV, MP3 or FLAC audio/, 'invalid_audio'],
    ['a model with no audio projector', { model: 'acme/text' }, WAV, 400, /model "acme\/text" does not support audio: it has no audio projector/, 'audio_not_supported'],
    ['a vision model', { model: 'acme/sees' }, WAV, 400, /model "acme\/sees" does not support audio/, 'audio_not_supported'],
    ['no such model', { model: 'acme/nothing' }, WAV, 404, /acme\/nothing/, null],
    ['no model', {}, WAV, 400, /model/, null],
    ['srt', { model: 'acme/hears', response_format: 'srt' }, WAV, 400, /response_format "srt" needs timestamps/, 'unsupported_response_format'],
    ['an unknown format', { model: 'acme/hears', response_format: 'yaml' }, WAV, 400, /response_format must be one of json, text, verbose_json/, 'invalid_response_format'],
    ['word timestamps', { model: 'acme/hears', 'timestamp_granularities[]': 'word' }, WAV, 400, /timestamp_granularities \(word\) need timestamps/, 'unsupported_timestamps'],
    ['a temperature that is no number', { model: 'acme/hears', temperature: 'warm' }, WAV, 400, /temperature/, null],
    ['a stream flag that is no flag', { model: 'acme/hears', stream: 'yes' }, WAV, 400, /stream/, null],
  ]
  for (const [what, fields, file, status, message, code] of cases) {
    const res = await form(url, fields, file)
    t.equal(res.status, status, `${what}: ${res.text}`)
    t.match(res.body, { error: { message, type: 'invalid_request_error' } }, what)
    if (code !== null) t.equal(res.body.error.code, code, what)
  }
})

t.test('a form that breaks multipart\'s rules: a clear 400, never a 500', async (t) => {
  const { url } = await served()
  const two = new FormData()
  two.append('file', new Blob([WAV]), 'a.wav')
  two.append('file', new Blob([WAV]), 'b.wav')
  two.append('model', 'acme/hears')
  const raw = (body: string, type: string): Promise<Response> => fetch(`${url}/v1/audio/transcriptions`, { method: 'POST', headers: { 'content-type': type }, body })
  const cases: Array<[string, Promise<Response>, RegExp]> = [
    ['two files', fetch(`${url}/v1/audio/transcriptions`, { method: 'POST', body: two }), /takes one file, the "file" field: this form has more/],
    ['a body cut short', raw('--zzz\r\nContent-Disposition: form-data; name="model"\r\n\r\nacme/hears\r\n--zzz\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\n\r\nRIFF', 'multipart/form-data; boundary=zzz'), /the multipart\/form-data body is malformed: Part terminated early/],
    ['no boundary', raw('garbage', 'multipart/form-data'), /the multipart\/form-data body is malformed: Multipart: Boundary not found/],
  ]
  for (const [what, sent, message] of cases) {
    const res = await sent
    t.equal(res.status, 400, what)
    t.match(await res.json(), { error: { message, type: 'invalid_request_error' } }, what)
  }
})

t.test('a file past limits.body_size is refused with 413 before the model is asked', async (t) => {
  const { url } = await serveRealisticModels(t, { 'acme/hears': { kind: 'qwen25', projector: 'audio' } }, { limits: { body_size: 20_000 } })
  const res = await form(url, { model: 'acme/hears' }, tinyWav(2))
  t.equal(res.status, 413, res.text)
  t.match(res.body, { error: { type: 'invalid_request_error', code: 'file_too_large', message: 'the file is larger than 20000 bytes (limits.body_size)' } })
})

t.test('the audio capability: /api/show, /api/tags and /v1/models say which models hear', async (t) => {
  const { url } = await served()
  const show = await (await fetch(`${url}/api/show`, { method: 'POST', body: JSON.stringify({ model: 'acme/hears' }) })).json() as { capabilities: string[] }
  t.same(show.capabilities.filter((c) => c === 'audio' || c === 'vision'), ['audio'])
  const sees = await (await fetch(`${url}/api/show`, { method: 'POST', body: JSON.stringify({ model: 'acme/sees' }) })).json() as { capabilities: string[] }
  t.same(sees.capabilities.filter((c) => c === 'audio' || c === 'vision'), ['vision'])
  const models = await (await fetch(`${url}/v1/models`)).json() as { data: Array<{ id: string, architecture: { input_modalities: string[] } }> }
  t.same(models.data.find((m) => m.id === 'acme/hears')!.architecture.input_modalities, ['text', 'audio'])
  t.same(models.data.find((m) => m.id === 'acme/sees')!.architecture.input_modalities, ['text', 'image'])
})
