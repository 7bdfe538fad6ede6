import { readFile } from 'node:fs/promises'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { inflateSync } from 'node:zlib'
import { gguf } from '@huggingface/gguf'
import t, { type Test } from 'tap'
import { RuntimeError } from '../../core/errors.js'
import { LlamaServer } from '../../runtimes/process/llama-server.js'
import { encodePng, TINY_PROJECTOR, tinyPng, writeTinyProjector } from '../../scripts/realistic-projector.js'
import { tempDir } from '../helpers/app.js'
import { realisticModel } from '../helpers/realistic-models.js'
import { cpuRuntime } from '../helpers/runtime.js'

// The tiny vision projector (scripts/realistic-projector.ts) beside the tiny qwen2 chat model under the real
// llama-server: images in chat messages go end to end, and what llama-server answers for the ways an image
// part can be wrong is recorded here as the gateway will see it.

const TEXT_EMBD = 64 // the chat fixture's n_embd (scripts/realistic-model.ts' default)
const signal = (): AbortSignal => AbortSignal.timeout(60_000)

async function projector (t: Test, textEmbd = TEXT_EMBD): Promise<string> {
  const { file } = await writeTinyProjector({ file: join(await tempDir(t), 'mmproj.gguf'), textEmbd })
  return file
}

async function serve (t: Test, options: { mmproj: string | null }): Promise<LlamaServer> {
  const server = new LlamaServer({
    build: await cpuRuntime(), modelPath: await realisticModel('qwen25'), alias: 'tiny/vision', ctxSize: 512,
    parallel: 1, threads: 1, extraArgs: options.mmproj === null ? [] : ['--mmproj', options.mmproj],
  })
  t.teardown(() => server.stop())
  await server.start()
  return server
}

/** A raw POST, so that error answers keep their status and body. */
async function post (server: LlamaServer, path: string, body: unknown): Promise<{ status: number, body: any }> {
  const res = await fetch(`${server.endpoint.address.baseUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), signal: signal() })
  const text = await res.text()
  let parsed: unknown = text
  try { parsed = JSON.parse(text) } catch { /* not JSON: keep the text */ }
  return { status: res.status, body: parsed }
}

/** What a test line says of an answer: llama-server's error message, if it gave one. */
const said = (res: { body: any }): string => `llama-server said: ${res.body?.error?.message ?? 'no error'}`

const dataUrl = (png: Buffer, mime = 'image/png'): string => `data:${mime};base64,${png.toString('base64')}`

/** One user message: a question and, where given, an image part with this URL. */
function chat (url: string | null, extra: Record<string, unknown> = {}): Record<string, unknown> {
  const content: unknown[] = [{ type: 'text', text: 'What is in this picture?' }]
  if (url !== null) content.push({ type: 'image_url', image_url: { url } })
  return { messages: [{ role: 'user', content }], max_tokens: 8, ...extra }
}

/** A solid colour picture. */
function solidPng (width: number, height: number, [r, g, b]: [number, number, number]): Buffer {
  const rgb = Buffer.alloc(width * height * 3)
  for (let i = 0; i < rgb.length; i += 3) rgb.set([r, g, b], i)
  return encodePng(width, height, rgb)
}

t.test('the projector file: clip.cpp\'s llava layout, output width the text model\'s, same seed same bytes', async (t) => {
  const dir = await tempDir(t)
  const a = await writeTinyProjector({ file: join(dir, 'a.gguf'), textEmbd: 64 })
  const { metadata, tensorInfos } = await gguf(a.file, { allowLocalFile: true }) as unknown as {
    metadata: Record<string, unknown>, tensorInfos: Array<{ name: string, shape: bigint[], dtype: number }>
  }
  t.equal(metadata['general.architecture'], 'clip', 'what the converter writes for an mmproj')
  t.equal(metadata['general.type'], 'mmproj')
  t.equal(metadata['clip.projector_type'], 'mlp')
  t.equal(metadata['clip.has_vision_encoder'], true)
  t.equal(metadata['clip.vision.projection_dim'], 64)
  t.equal(metadata['clip.vision.image_size'], TINY_PROJECTOR.imageSize)
  t.equal(metadata['clip.vision.patch_size'], TINY_PROJECTOR.patchSize)
  const shape = (name: string): number[] => tensorInfos.find((i) => i.name === name)!.shape.map(Number)
  t.same(shape('v.patch_embd.weight'), [TINY_PROJECTOR.patchSize, TINY_PROJECTOR.patchSize, 3, TINY_PROJECTOR.nEmbd], 'GGUF order: kw, kh, channels, width')
  t.same(shape('v.position_embd.weight'), [TINY_PROJECTOR.nEmbd, TINY_PROJECTOR.tokensPerImage + 1])
  t.same(shape('mm.2.weight'), [64, 64], 'clip.cpp reads the output width from mm.2.weight\'s rows')
  t.same(shape('mm.0.weight'), [TINY_PROJECTOR.nEmbd, 64])
  t.equal(tensorInfos.length, 5 + 16 * TINY_PROJECTOR.nLayer + 4)
  t.ok(a.bytes > 10_000 && a.bytes < 200_000, `small: ${a.bytes} bytes`)
  const again = await writeTinyProjector({ file: join(dir, 'b.gguf'), textEmbd: 64 })
  t.same(await readFile(again.file), await readFile(a.file))
  const other = await writeTinyProjector({ file: join(dir, 'c.gguf'), textEmbd: 64, seed: 2 })
  t.notSame(await readFile(other.file), await readFile(a.file), 'another seed, other weights')
})

t.test('tinyPng: a valid PNG whose pixels decode back', async (t) => {
  const png = tinyPng(5, 3)
  t.same([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])
  t.equal(png.toString('latin1', 12, 16), 'IHDR')
  t.equal(png.readUInt32BE(16), 5)
  t.equal(png.readUInt32BE(20), 3)
  const idatLength = png.readUInt32BE(33)
  t.equal(png.toString('latin1', 37, 41), 'IDAT')
  const rows = inflateSync(png.subarray(41, 41 + idatLength))
  t.equal(rows.length, 3 * (1 + 5 * 3), 'a filter byte and 5 RGB pixels per row')
  t.same([...rows.subarray(1, 4)], [255, 255, 255], 'the stripe at (0, 0)')
  t.same([...rows.subarray(7, 10)], [128, 0, 96], 'the gradient at (2, 0)')
  t.equal(png.toString('latin1', png.length - 8, png.length - 4), 'IEND')
  t.throws(() => encodePng(2, 2, Buffer.alloc(11)), /expected 12 bytes/)
})

t.test('llama-server with --mmproj: an image in a chat is decoded, encoded and read by the model', async (t) => {
  const server = await serve(t, { mmproj: await projector(t) })
  t.match(server.logTail().join('\n'), /loaded multimodal model, '.*mmproj\.gguf'/, 'the projector loaded')
  const props = await (await fetch(`${server.endpoint.address.baseUrl}/props`)).json() as { modalities: Record<string, boolean>, media_marker: string }
  t.equal(props.modalities.vision, true)
  t.equal(props.modalities.audio, false)

  // ignore_eos: a random-weight model may end its turn at any token; held to the limit, it writes all 8.
  const withImage = await post(server, '/v1/chat/completions', chat(dataUrl(tinyPng()), { ignore_eos: true }))
  t.equal(withImage.status, 200, said(withImage))
  t.equal(withImage.body.usage.completion_tokens, 8)
  t.type(withImage.body.choices[0].message.content, 'string')
  const without = await post(server, '/v1/chat/completions', chat(null))
  t.equal(without.status, 200)
  t.ok(withImage.body.usage.prompt_tokens > without.body.usage.prompt_tokens, 'the image\'s tokens went in')
  t.equal(withImage.body.usage.prompt_tokens - without.body.usage.prompt_tokens, TINY_PROJECTOR.tokensPerImage,
    'one position per 8x8 patch of the 32x32 picture')

  // Any size is resized to the projector's 32x32: the same count of positions.
  const large = await post(server, '/v1/chat/completions', chat(dataUrl(tinyPng(100, 60))))
  t.equal(large.status, 200)
  t.equal(large.body.usage.prompt_tokens, withImage.body.usage.prompt_tokens)

  // What the picture shows reaches the model: another picture, other next-token probabilities.
  const top = async (png: Buffer): Promise<Array<[string, number]>> => {
    const res = await post(server, '/v1/chat/completions', chat(dataUrl(png), { max_tokens: 1, temperature: 0, logprobs: true, top_logprobs: 3 }))
    t.equal(res.status, 200)
    return (res.body.choices[0].logprobs.content[0].top_logprobs as Array<{ token: string, logprob: number }>).map((p) => [p.token, p.logprob])
  }
  const red = await top(solidPng(32, 32, [255, 0, 0]))
  const blue = await top(solidPng(32, 32, [0, 0, 255]))
  t.equal(red.length, 3)
  t.notSame(red, blue)
  t.same(await top(solidPng(32, 32, [255, 0, 0])), red, 'and the same picture, the same ones')
})

t.test('image URLs: which llama-server takes, and its answers for the rest', async (t) => {
  const server = await serve(t, { mmproj: await projector(t) })
  const png = tinyPng()
  const ok = async (url: string, what: string): Promise<void> => {
    const res = await post(server, '/v1/chat/completions', chat(url, { max_tokens: 1 }))
    t.equal(res.status, 200, `${what}: ${said(res)}`)
  }
  const refused = async (url: string, status: number, message: string | RegExp, what: string): Promise<void> => {
    const res = await post(server, '/v1/chat/completions', chat(url, { max_tokens: 1 }))
    t.equal(res.status, status, what)
    t.match(res.body?.error?.message, message, what)
  }
  // The MIME type only has to start with image/, video/ or audio/ and end in base64: the bytes are sniffed.
  await ok(dataUrl(png, 'image/jpeg'), 'a PNG labelled image/jpeg')
  await ok(dataUrl(png, 'audio/wav'), 'a PNG labelled audio/wav')
  await ok(png.toString('base64'), 'bare base64, no data: prefix')
  await refused(dataUrl(png, 'text/plain'), 400, 'Invalid uri format: data:text/plain;base64', 'another MIME type')
  await refused(`data:image/png,${png.toString('base64')}`, 400, 'uri must be base64 encoded', 'a data URL without ;base64')
  await refused('data:image/png;base64,!!!!', 400, 'Failed to load image or audio file', 'bad base64 in a data URL')
  await refused(`data:image/png;base64,${Buffer.from('not a picture').toString('base64')}`, 400, 'Failed to load image or audio file', 'base64 of no picture')
  await refused('!!!!', 500, 'Invalid base64 value', 'bad bare base64')
  await refused('file:///etc/hostname', 400, 'file:// URLs are not allowed unless --media-path is specified', 'a file URL')
  await refused('https://example.com/cat.png', 500, /^HTTPS is not supported/, 'https: this build has no TLS')
  await refused('http://127.0.0.1:1/cat.png', 500, 'error: cannot make GET request', 'http, nothing listening')

  // Plain http is fetched, by llama-server itself (cpp-httplib, 10 s, 10 MB): a gateway that must not let
  // clients make it reach other hosts has to refuse or fetch such URLs itself.
  const fetched: string[] = []
  const http = createServer((req, res) => {
    fetched.push(req.url!)
    if (req.url === '/cat.png') res.writeHead(200, { 'content-type': 'image/png' }).end(png)
    else res.writeHead(404).end()
  })
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve))
  t.teardown(() => { http.closeAllConnections(); http.close() })
  const base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`
  await ok(`${base}/cat.png`, 'a plain http URL')
  await refused(`${base}/missing.png`, 500, 'Failed to download image', 'http, a 404')
  t.same(fetched, ['/cat.png', '/missing.png'])
})

t.test('raw prompts: /completion takes base64 pictures in multimodal_data, one per media marker from /props', async (t) => {
  const server = await serve(t, { mmproj: await projector(t) })
  const { media_marker: marker } = await (await fetch(`${server.endpoint.address.baseUrl}/props`)).json() as { media_marker: string }
  t.match(marker, /^<__media_\w+__>$/, 'random per process (LLAMA_MEDIA_MARKER pins it), not mtmd\'s <__media__>')
  const image = tinyPng().toString('base64')
  const withImage = await post(server, '/completion', { prompt: { prompt_string: `${marker}It shows`, multimodal_data: [image] }, n_predict: 2 })
  t.equal(withImage.status, 200, said(withImage))
  // (Text on both sides of the marker is tokenized piece by piece: here the same text either way.)
  const textOnly = await post(server, '/completion', { prompt: 'It shows', n_predict: 2 })
  t.equal(textOnly.status, 200)
  t.equal(withImage.body.tokens_evaluated - textOnly.body.tokens_evaluated, TINY_PROJECTOR.tokensPerImage)
  const refusals: Array<[string, unknown, string]> = [
    ['mtmd\'s default marker', { prompt_string: 'Look: <__media__>', multimodal_data: [image] }, 'Failed to tokenize prompt'],
    ['no marker', { prompt_string: 'Look:', multimodal_data: [image] }, 'Failed to tokenize prompt'],
    ['two markers, one picture', { prompt_string: `${marker} ${marker}`, multimodal_data: [image] }, 'Failed to tokenize prompt'],
    ['a data URL: bare base64 only', { prompt_string: marker, multimodal_data: [`data:image/png;base64,${image}`] }, 'Failed to load image or audio file'],
  ]
  for (const [what, prompt, message] of refusals) {
    const res = await post(server, '/completion', { prompt, n_predict: 1 })
    t.equal(res.status, 400, what)
    t.equal(res.body?.error?.message, message, what)
  }
})

t.test('without --mmproj: image parts are refused, and a projector of the wrong width fails the start', async (t) => {
  const plain = await serve(t, { mmproj: null })
  const props = await (await fetch(`${plain.endpoint.address.baseUrl}/props`)).json() as { modalities: Record<string, boolean> }
  t.equal(props.modalities.vision, false)
  const res = await post(plain, '/v1/chat/completions', chat(dataUrl(tinyPng())))
  t.equal(res.status, 500)
  t.equal(res.body.error.message, 'image input is not supported - hint: if this is unexpected, you may need to provide the mmproj')
  const raw = await post(plain, '/completion', { prompt: { prompt_string: 'x', multimodal_data: [tinyPng().toString('base64')] }, n_predict: 1 })
  t.equal(raw.status, 400)
  t.equal(raw.body.error.message, 'Multimodal data provided, but model does not support multimodal requests.')

  const wrong = new LlamaServer({
    build: await cpuRuntime(), modelPath: await realisticModel('qwen25'), alias: 'tiny/wrong-mmproj', ctxSize: 512,
    parallel: 1, threads: 1, extraArgs: ['--mmproj', await projector(t, 32)],
  })
  t.teardown(() => wrong.stop())
  const err = await t.rejects(wrong.start())
  t.type(err, RuntimeError)
  t.match((err as RuntimeError).logTail.join('\n'), /mismatch between text model \(n_embd = 64\) and mmproj \(n_embd = 32\)/)
})
