import { join } from 'node:path'
import t from 'tap'
import { hashSecret, writeKeysFile } from '../../../plugins/security/keys-file.js'
import { audioTokens, tinyWav } from '../../../scripts/fixtures/realistic-audio-projector.js'
import { tempDir } from '../../helpers/app.js'
import { serveRealisticModels } from '../../helpers/inference.js'
import { until } from '../../helpers/until.js'

const secret = (name: string): string => `lg-test-${name}-0123456789abcdef`
const as = (name: string): Record<string, string> => ({ authorization: `Bearer ${secret(name)}` })

async function transcribe (url: string, model: string, headers: Record<string, string>): Promise<Response> {
  const form = new FormData()
  form.append('file', new Blob([tinyWav(1)], { type: 'audio/wav' }), 'clip.wav')
  form.append('model', model)
  form.append('max_tokens', '2')
  return fetch(`${url}/v1/audio/transcriptions`, { method: 'POST', body: form, headers })
}

t.test('a transcription is a request like any other: a key\'s scope and models, its quota, its usage, /metrics', async (t) => {
  const keysFile = join(await tempDir(t), 'keys.yaml')
  const key = (name: string, models: string[], scopes: Array<'infer' | 'admin'>, limits = {}) => ({ name, hash: hashSecret(secret(name)), scopes, models, limits, created: new Date().toISOString() })
  await writeKeysFile(keysFile, { keys: [key('ops', ['*'], ['infer', 'admin']), key('listener', ['acme/hears'], ['infer', 'admin'], { tokens_per_day: 900 }), key('reader', ['*'], ['admin'])] })
  const { url } = await serveRealisticModels(t, { 'acme/hears': { kind: 'qwen25', projector: 'audio' }, 'acme/also-hears': { kind: 'qwen25', projector: 'audio' } }, { auth: { keys_file: keysFile } })

  t.equal((await transcribe(url, 'acme/hears', {})).status, 401, 'no key, no transcription')
  const unscoped = await transcribe(url, 'acme/hears', as('reader'))
  t.equal(unscoped.status, 403, 'a key without the infer scope')
  t.match(await unscoped.json(), { error: { message: /lacks the "infer" scope/ } })
  const outside = await transcribe(url, 'acme/also-hears', as('listener'))
  t.equal(outside.status, 403, 'a model outside the key\'s list')
  t.match(await outside.json(), { error: { type: 'invalid_request_error', message: /may not use model "acme\/also-hears"/ } })

  const first = await transcribe(url, 'acme/hears', as('listener'))
  t.equal(first.status, 200)
  const { usage } = await first.json() as { usage: { input_tokens: number, output_tokens: number } }
  t.ok(usage.input_tokens > audioTokens(1))
  await until('the transcription counted for its key', async () => {
    const body = await (await fetch(`${url}/api/usage`, { headers: as('listener') })).json() as any
    return body.keys[0]?.models[0]?.prompt_tokens === usage.input_tokens
  })
  const mine = await (await fetch(`${url}/api/usage`, { headers: as('listener') })).json() as any
  t.match(mine.keys[0], { key: 'listener', models: [{ model: 'acme/hears', requests: 1, prompt_tokens: usage.input_tokens, generated_tokens: usage.output_tokens }] }, 'usage: its tokens, under its key')
  // Each reserved at one 30 s window (750 tokens, plugins/quotas/prompt-estimate.ts) and booked at about 80, against
  // 900 a day: the third finds too little left for its reservation.
  let refused: Response | null = null
  for (let i = 0; i < 4 && refused === null; i++) {
    const res = await transcribe(url, 'acme/hears', as('listener'))
    if (res.status !== 200) refused = res
    else await res.body?.cancel()
  }
  t.equal(refused?.status, 429, 'past its tokens per day: refused')
  t.match(await refused?.json(), { error: { type: 'tokens', message: /tokens/ } })

  const metrics = await (await fetch(`${url}/metrics`, { headers: as('ops') })).text()
  t.match(metrics, /llamagate_requests_total\{surface="audio",model="acme\/hears",status="200"\} [1-9]/, '/metrics counts them by surface and model')
})
