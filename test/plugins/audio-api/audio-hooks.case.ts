import t from 'tap'
import type { CallOutcome, CallRequest } from '../../../core/platform/call-hooks.js'
import { ForbiddenError } from '../../../core/base/errors.js'
import { tinyWav } from '../../../scripts/fixtures/realistic-audio-projector.js'
import { serveRealisticModels } from '../../helpers/inference.js'

// A transcription goes through the plugins' call hooks as the chat it is made into: `before` sees the prompt and the
// audio part (and may refuse), `piece` hooks see and may change its text, `after` is told the text as the client got it.

t.test('call hooks on a transcription: before sees the audio part, piece hooks change the text, after is told it', async (t) => {
  const { app, url } = await serveRealisticModels(t, { 'acme/hears': { kind: 'qwen25', projector: 'audio' } })
  const seen: CallRequest[] = []
  const outcomes: CallOutcome[] = []
  app.callHooks.add({
    name: 'test-hooks',
    before (request) {
      seen.push(request)
      if (JSON.stringify(request.messages).includes('(language: xx)')) throw new ForbiddenError('no language xx here')
    },
    piece (piece) { if (piece.kind === 'text') piece.text = 'HEARD ' },
    after (outcome) { outcomes.push(outcome) },
  })
  const send = async (fields: Record<string, string>): Promise<Response> => {
    const form = new FormData()
    form.append('file', new Blob([tinyWav(1)], { type: 'audio/wav' }), 'clip.wav')
    for (const [key, value] of Object.entries(fields)) form.append(key, value)
    return fetch(`${url}/v1/audio/transcriptions`, { method: 'POST', body: form })
  }
  const res = await send({ model: 'acme/hears', max_tokens: '3' })
  const body = await res.json() as { text: string }
  t.equal(res.status, 200, JSON.stringify(body))
  t.equal(body.text, 'HEARD ', 'the piece hook\'s text is the transcription')
  t.match(seen[0], { surface: 'audio', route: '/v1/audio/transcriptions', model: 'acme/hears', messages: [{ role: 'user', content: [{ type: 'text', text: 'Transcribe audio to text' }, { type: 'input_audio', input_audio: { format: 'wav', data: String } }] }] })
  t.equal(outcomes.length, 1)
  t.match(outcomes[0], { text: 'HEARD ', streamed: false })
  const streamed = await send({ model: 'acme/hears', max_tokens: '3', stream: 'true' })
  const events = (await streamed.text()).split('\n\n').filter((e) => e.startsWith('data: ')).map((e) => JSON.parse(e.slice(6)) as { type: string, delta?: string, text?: string })
  t.ok(events.filter((e) => e.type === 'transcript.text.delta').every((e) => e.delta === 'HEARD '), 'streamed: each delta as the hook left it')
  t.equal(events.at(-1)!.type, 'transcript.text.done')
  const refused = await send({ model: 'acme/hears', language: 'xx' })
  t.equal(refused.status, 403)
  t.match(await refused.json(), { error: { message: 'no language xx here', type: 'invalid_request_error' } })
})
