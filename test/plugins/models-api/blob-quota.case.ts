// The upload quota, against a blob flood: uploads no model is made from were bounded by the disk alone, so one client
// could fill it with blobs it never meant to use. limits.blob_quota bounds them together, uploads under way included.
import { createHash, randomBytes } from 'node:crypto'
import { readdir, readFile, stat, writeFile } from 'node:fs/promises'
import { connect, type Socket } from 'node:net'
import { join } from 'node:path'
import t from 'tap'
import { formatBytes } from '../../../core/base/units.js'
import { writeTinyGguf } from '../../../scripts/fixtures/tiny-model.js'
import { tempDir } from '../../helpers/app.js'
import { post, serveTinyModels, sharedServer } from '../../helpers/inference.js'
import { runCli } from '../../helpers/serve-process.js'
import { until } from '../../helpers/until.js'
import { usualMs, withinUsualTime } from '../../helpers/usual-time.js'

const digestOf = (bytes: Buffer): string => `sha256:${createHash('sha256').update(bytes).digest('hex')}`
const mib = formatBytes
const escape = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

// Two tiny models' GGUFs (same size, different weights): the quota holds one and a half of them.
const dir = await tempDir(t)
const ggufA = await readFile((await writeTinyGguf({ file: join(dir, 'a.gguf'), seed: 11 })).file)
const ggufB = await readFile((await writeTinyGguf({ file: join(dir, 'b.gguf'), seed: 12 })).file)
const QUOTA = Math.floor(ggufA.length * 1.5)
const server = sharedServer(() => serveTinyModels(t, ['acme/tiny'], { limits: { blob_quota: QUOTA } }))
const blobDir = async (): Promise<string> => join((await server()).app.config.modelsDir, '.llamagate', 'blobs')

interface RawUpload {
  socket: Socket
  /** The whole answer (head and body), once it is in. */
  answer: Promise<string>
  /** All the server sent on the connection so far. */
  received: () => string
  /** Resolves when the server closed the connection. */
  closed: Promise<void>
}

/** A POST to /api/blobs/<digest> on a socket of its own: only its head is sent, with `headers`; write the body after. */
function rawUpload (url: string, digest: string, headers: Record<string, string>): RawUpload {
  const { port } = new URL(url)
  const socket = connect(Number(port), '127.0.0.1')
  socket.on('error', () => {})
  let text = ''
  const answer = new Promise<string>((resolve) => {
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('utf8')
      const end = text.indexOf('\r\n\r\n')
      const length = Number(/\r\ncontent-length: (\d+)/i.exec(text)?.[1] ?? NaN)
      if (end !== -1 && text.length >= end + 4 + length) resolve(text)
    })
  })
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()))
  const head = Object.entries({ Host: `127.0.0.1:${port}`, 'Content-Type': 'application/octet-stream', ...headers }).map(([k, v]) => `${k}: ${v}\r\n`).join('')
  socket.write(`POST /api/blobs/${digest} HTTP/1.1\r\n${head}\r\n`)
  t.teardown(() => { socket.destroy() })
  return { socket, answer, received: () => text, closed }
}

const errorOf = (answer: string): string => (JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)) as { error: string }).error

async function upload (url: string, bytes: Buffer): Promise<Response> {
  return fetch(`${url}/api/blobs/${digestOf(bytes)}`, { method: 'POST', headers: { 'content-type': 'application/octet-stream' }, body: bytes })
}

t.test('an upload whose declared length would pass the quota: 507 blob_quota before a byte is written', async (t) => {
  const { url } = await server()
  const refused = rawUpload(url, digestOf(ggufA), { 'Content-Length': String(QUOTA + 1) })
  refused.socket.write(ggufA.subarray(0, 1024))
  const answer = await refused.answer
  t.match(answer, /^HTTP\/1\.1 507 /, '507 Insufficient Storage')
  t.equal(errorOf(answer), `this upload (${mib(QUOTA + 1)}) would pass the upload quota: blobs uploaded and not made into a model yet hold 0 bytes of its ${mib(QUOTA)} (limits.blob_quota); free room with DELETE /api/blobs/<digest>, or by creating the models they are for (POST /api/create)`,
    'says the upload, what is held, the quota and how to free room')
  // A client that sends the rest anyway (it had started): dropped, and the connection serves its next request.
  refused.socket.write(randomBytes(QUOTA + 1 - 1024))
  refused.socket.write(`GET /api/tags HTTP/1.1\r\nHost: 127.0.0.1:${new URL(url).port}\r\n\r\n`)
  t.ok(await until('the next answer on the same connection', () => /\r\n\r\n[\s\S]*HTTP\/1\.1 200 /.test(refused.received())), 'the rest was read and dropped; the connection serves on')
  t.same(await readdir(await blobDir()), [], 'nothing written')
  t.equal((await upload(url, Buffer.from('a small blob fits'))).status, 201, 'a blob under the quota is stored')
  t.equal((await fetch(`${url}/api/blobs/${digestOf(Buffer.from('a small blob fits'))}`, { method: 'DELETE' })).status, 200)
})

t.test('an upload without a declared length is cut where it passes the quota, its partial file removed; others served meanwhile', async (t) => {
  const { url } = await server()
  const normalChat = (): Promise<Response> => post(`${url}/api/chat`, { model: 'acme/tiny', messages: [{ role: 'user', content: 'hi' }], stream: false, options: { num_predict: 2 } })
  const usual = await usualMs(async () => (await normalChat()).json())
  const chunked = rawUpload(url, digestOf(ggufA), { 'Transfer-Encoding': 'chunked' })
  const chunk = (bytes: Buffer): void => { chunked.socket.write(`${bytes.length.toString(16)}\r\n`); chunked.socket.write(bytes); chunked.socket.write('\r\n') }
  const half = Math.floor(QUOTA / 2)
  chunk(ggufA.subarray(0, half))
  const partial = await until('the first half on disk', async () => {
    for (const name of await readdir(await blobDir())) {
      if (name.includes('.partial-') && (await stat(join(await blobDir(), name)).catch(() => null))?.size === half) return name
    }
    return null
  })
  t.ok(partial, `written as it arrives, under a temporary name: ${partial}`)
  const tags = await fetch(`${url}/api/tags`)
  t.equal(tags.status, 200, 'a list is answered meanwhile')
  const started = performance.now()
  const chat = await normalChat()
  withinUsualTime(t, 'a chat', performance.now() - started, usual)
  t.equal(chat.status, 200, 'a chat is answered meanwhile')
  t.equal((await chat.json() as { done: boolean }).done, true)

  chunk(randomBytes(QUOTA - half + 1))
  const answer = await chunked.answer
  t.match(answer, /^HTTP\/1\.1 507 /, '507 once it passes the quota')
  t.equal(errorOf(answer), `this upload was cut off at ${mib(QUOTA + 1)}, past the upload quota: blobs uploaded and not made into a model yet hold 0 bytes of its ${mib(QUOTA)} (limits.blob_quota); free room with DELETE /api/blobs/<digest>, or by creating the models they are for (POST /api/create), then send it again`,
    'cut at the byte that passed it, saying so')
  t.same(await readdir(await blobDir()), [], 'the partial file is removed, nothing kept')
  // A client that sends on regardless: what it sends is dropped for a moment, then its connection is closed.
  let closed = false
  void chunked.closed.then(() => { closed = true })
  const sending = setInterval(() => { if (!closed) chunk(randomBytes(64 * 1024)) }, 20)
  t.teardown(() => { clearInterval(sending) })
  t.ok(await until('the connection closed', () => closed), 'the server closed the connection of a client sending on')
  clearInterval(sending)
  t.same(await readdir(await blobDir()), [], 'and nothing of it was kept')
})

t.test('two uploads racing the quota together: the first reserves its length, the second is refused, the first is stored whole', async (t) => {
  const { url } = await server()
  const size = Math.floor(QUOTA * 0.8)
  const bodies = [randomBytes(size), randomBytes(size)]
  const uploads = bodies.map((bytes) => rawUpload(url, digestOf(bytes), { 'Content-Length': String(size) }))
  const answers: Array<string | null> = [null, null]
  uploads.forEach((u, i) => { void u.answer.then((a) => { answers[i] = a }) })
  // Neither has sent a byte of its body: the one refused is refused on its declared length alone.
  const refusedIndex = await until('one of the two refused', () => { const i = answers.findIndex((a) => a !== null); return i === -1 ? null : i + 1 }) - 1
  const acceptedIndex = 1 - refusedIndex
  t.match(answers[refusedIndex], /^HTTP\/1\.1 507 /, 'one is refused')
  t.equal(errorOf(answers[refusedIndex]!), `this upload (${mib(size)}) would pass the upload quota: blobs uploaded and not made into a model yet hold ${mib(size)} of its ${mib(QUOTA)} (limits.blob_quota), ${mib(size)} of it in uploads under way; free room with DELETE /api/blobs/<digest>, or by creating the models they are for (POST /api/create)`,
    'counting what the other reserved')
  t.equal(answers[acceptedIndex], null, 'the other waits for its body')
  uploads[acceptedIndex]!.socket.write(bodies[acceptedIndex]!)
  t.match(await uploads[acceptedIndex]!.answer, /^HTTP\/1\.1 201 /, 'and is stored once it is sent')
  t.equal((await fetch(`${url}/api/blobs/${digestOf(bodies[acceptedIndex]!)}`, { method: 'HEAD' })).status, 200)
  t.equal((await fetch(`${url}/api/blobs/${digestOf(bodies[refusedIndex]!)}`, { method: 'HEAD' })).status, 404, 'the refused one is not there')
  t.same(await readdir(await blobDir()), [`sha256-${digestOf(bodies[acceptedIndex]!).slice(7)}`], 'no partial file left')
  t.equal((await fetch(`${url}/api/blobs/${digestOf(bodies[acceptedIndex]!)}`, { method: 'DELETE' })).status, 200, 'DELETE frees its room')
  t.equal((await upload(url, bodies[refusedIndex]!)).status, 201, 'the refused one fits now')
  t.equal((await fetch(`${url}/api/blobs/${digestOf(bodies[refusedIndex]!)}`, { method: 'DELETE' })).status, 200)
})

t.test('a blob made into a model no longer counts against the quota', async (t) => {
  const { url } = await server()
  t.equal((await upload(url, ggufA)).status, 201, 'one GGUF fits')
  const refused = await upload(url, ggufB)
  t.equal(refused.status, 507, 'a second does not')
  t.match(await refused.json(), { error: new RegExp(`hold ${escape(mib(ggufA.length))} of its`) }, 'the first is counted')
  const made = await post(`${url}/api/create`, { model: 'me/from-blob', files: { 'm.gguf': digestOf(ggufA) }, stream: false })
  t.equal(made.status, 200, await made.text())
  t.equal((await upload(url, ggufB)).status, 201, 'once a model is made from the first, the second fits')
  t.equal((await fetch(`${url}/api/blobs/${digestOf(ggufB)}`, { method: 'DELETE' })).status, 200)
  const tags = await (await fetch(`${url}/api/tags`)).json() as { models: Array<{ name: string }> }
  t.ok(tags.models.some((m) => m.name === 'me/from-blob'), 'the model is listed')
})

t.test('llamagate create FROM a file past the quota: refused before it is sent, the CLI printing why', async (t) => {
  const { url } = await server()
  const folder = await tempDir(t)
  await writeFile(join(folder, 'big.gguf'), randomBytes(QUOTA * 3))
  await writeFile(join(folder, 'Modelfile'), 'FROM ./big.gguf\n')
  const before = await readdir(await blobDir())
  const result = await runCli(['create', 'me/big', '-f', join(folder, 'Modelfile'), '--host', url])
  t.equal(result.code, 1)
  t.equal(result.stderr, `llamagate create: this upload (${mib(QUOTA * 3)}) would pass the upload quota: blobs uploaded and not made into a model yet hold 0 bytes of its ${mib(QUOTA)} (limits.blob_quota); free room with DELETE /api/blobs/<digest>, or by creating the models they are for (POST /api/create)\n`,
    'the quota\'s message, not a broken pipe')
  t.same(await readdir(await blobDir()), before, 'nothing kept')
})

t.test('limits.blob_quota: 200 GiB by default; 0 or null for none', async (t) => {
  const { resolveConfig } = await import('../../../core/platform/config.js')
  t.equal(resolveConfig([]).limits.blobQuota, 200 * 1024 ** 3)
  t.equal(resolveConfig([{ source: 'test', values: { limits: { blob_quota: 0 } } }]).limits.blobQuota, null)
  t.equal(resolveConfig([{ source: 'test', values: { limits: { blob_quota: null } } }]).limits.blobQuota, null)
  t.equal(resolveConfig([{ source: 'test', values: { limits: { blob_quota: '1GiB' } } }]).limits.blobQuota, 1024 ** 3)
  t.throws(() => resolveConfig([{ source: 'test', values: { limits: { blob_quota: 'lots' } } }]), /limits\.blob_quota/)
})
