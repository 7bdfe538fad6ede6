import t from 'tap'
import type { CallPiece } from '../../../core/platform/call-hooks.js'
import { post, serveRealisticModels } from '../../helpers/inference.js'

// A whole /v1/responses answer reaches the plugins' piece hooks as one whole piece, as docs/plugins.md promises and
// as a whole chat does; a streamed one, piece by piece.

t.test('piece hooks: a whole Responses answer is one whole piece; a streamed one comes in streamed pieces', async (t) => {
  const { app, url } = await serveRealisticModels(t, { 'acme/qwen': 'qwen25' }, { models: { 'acme/qwen': { options: { ignore_eos: true } } } })
  const pieces: CallPiece[] = []
  app.callHooks.add({ name: 'recorder', piece (piece) { pieces.push({ ...piece }); if (piece.kind === 'text' && piece.whole) piece.text = piece.text.toUpperCase() } })

  const res = await post(`${url}/v1/responses`, { model: 'acme/qwen', input: 'hello', max_output_tokens: 6, temperature: 0 })
  const body = await res.json() as { output: Array<{ type: string, content?: Array<{ text: string }> }>, usage: { output_tokens: number } }
  t.equal(res.status, 200, JSON.stringify(body))
  const text = pieces.filter((p) => p.kind === 'text')
  t.equal(text.length, 1, 'one text piece')
  t.equal(text[0]!.whole, true, 'whole')
  t.equal(body.usage.output_tokens, 6)
  const said = body.output.find((o) => o.type === 'message')!.content![0]!.text
  t.equal(said, text[0]!.text.toUpperCase(), 'what the hook made of it is the answer')

  pieces.length = 0
  const streamed = await post(`${url}/v1/responses`, { model: 'acme/qwen', input: 'hello', max_output_tokens: 6, temperature: 0, stream: true })
  const events = (await streamed.text()).split('\n\n').filter((e) => e !== '').map((e) => /^event: (\S+)/.exec(e)?.[1])
  t.match(events.at(-1), /^response\.(completed|incomplete)$/, 'the stream ended as a response does')
  t.ok(pieces.length > 1 && pieces.every((p) => !p.whole), `streamed: ${pieces.length} pieces, none whole`)
})
