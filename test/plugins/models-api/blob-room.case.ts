// Uploaded blobs, against a blob flood: 100 MB of random bytes were kept forever, outlived the models made from
// them, could not be deleted (405), and a full disk gave 500 where pulls give 507.
import { createHash } from 'node:crypto'
import { link, readdir, readFile, rm } from 'node:fs/promises'
import { connect } from 'node:net'
import { join } from 'node:path'
import t from 'tap'
import { BlobStore } from '../../../plugins/storage/blob-store.js'
import { writeTinyGguf } from '../../../scripts/fixtures/tiny-model.js'
import { tempDir } from '../../helpers/app.js'
import { post, serveTinyModels } from '../../helpers/inference.js'

const digestOf = (bytes: Buffer): string => `sha256:${createHash('sha256').update(bytes).digest('hex')}`

async function upload (url: string, digest: string, bytes: Buffer): Promise<number> {
  return (await fetch(`${url}/api/blobs/${digest}`, { method: 'POST', headers: { 'content-type': 'application/octet-stream' }, body: bytes })).status
}

/** Sends only the head of a POST whose Content-Length says `length`, and resolves with the server's answer. */
function declareUpload (url: string, path: string, length: number): Promise<string> {
  const { port } = new URL(url)
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1')
    let answer = ''
    socket.on('data', (chunk: Buffer) => {
      answer += chunk.toString('utf8')
      if (/\r\n\r\n[\s\S]*\}/.test(answer)) { socket.destroy(); resolve(answer) }
    })
    socket.on('error', reject)
    socket.write(`POST ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/octet-stream\r\nContent-Length: ${length}\r\n\r\nfirst bytes`)
  })
}

t.test('an upload the disk cannot hold: 507 before it is read, nothing written; another client is served meanwhile', async (t) => {
  const { app, url } = await serveTinyModels(t)
  const answer = declareUpload(url, `/api/blobs/sha256:${'a'.repeat(64)}`, 10 ** 16)
  const tags = await fetch(`${url}/api/tags`)
  t.equal(tags.status, 200, 'another client is answered')
  const text = await answer
  t.match(text, /^HTTP\/1\.1 507 /, '507 Insufficient Storage')
  t.match(text, /"error":"not enough disk space for this upload: it is [\d.]+ [PT]iB, [\d.]+ [GMT]iB are free"/, 'says how much it needed and how much is free, without the path')
  const blobDir = join(app.config.modelsDir, '.llamagate', 'blobs')
  t.same(await readdir(blobDir), [], 'nothing written')
})

t.test('DELETE /api/blobs/<digest>: removed (a model made from it keeps its bytes), then 404; a bad digest 400', async (t) => {
  const { url } = await serveTinyModels(t)
  const bytes = await readFile((await writeTinyGguf({ file: join(await tempDir(t), 'b.gguf'), seed: 5 })).file)
  const digest = digestOf(bytes)
  t.equal(await upload(url, digest, bytes), 201)
  const made = await post(`${url}/api/create`, { model: 'me/from-blob', files: { 'm.gguf': digest } })
  t.equal(made.status, 200)
  await made.text()
  t.equal((await fetch(`${url}/api/blobs/${digest}`, { method: 'DELETE' })).status, 200, 'deleted')
  t.equal((await fetch(`${url}/api/blobs/${digest}`, { method: 'HEAD' })).status, 404, 'gone')
  const again = await fetch(`${url}/api/blobs/${digest}`, { method: 'DELETE' })
  t.equal(again.status, 404)
  t.match(await again.json(), { error: `blob ${digest} not found` })
  t.equal((await fetch(`${url}/api/blobs/sha256:nope`, { method: 'DELETE' })).status, 400)
  const chat = await post(`${url}/api/chat`, { model: 'me/from-blob', messages: [{ role: 'user', content: 'hi' }], stream: false, options: { num_predict: 2 } })
  t.equal(chat.status, 200, 'the model made from it still answers')
})

t.test('blobs no model holds are reclaimed once unused for the limit; held and young ones stay', async (t) => {
  const dir = await tempDir(t)
  const store = new BlobStore(dir)
  await store.init()
  const put = async (text: string): Promise<string> => {
    const bytes = Buffer.from(text)
    const digest = digestOf(bytes)
    await store.put(digest, (await import('node:stream')).Readable.from([bytes]))
    return digest
  }
  const held = await put('held by a model')
  const loose = await put('held by nothing')
  // A model made from a blob holds a hard link to its bytes (what /api/create makes).
  const modelFile = join(dir, 'model.gguf')
  await link((await store.find(held))!, modelFile)

  t.same(await store.reclaim(60_000), [], 'nothing unused for a minute yet')
  t.same(await store.reclaim(0), [loose], 'the loose one goes; the held one stays')
  t.not(await store.find(held), null)
  await rm(modelFile)
  t.same(await store.reclaim(60_000), [], 'its model just went: it waits out the limit from then')
  t.same(await store.reclaim(0, Date.now() + 1), [held], 'and then goes')
  t.same((await readdir(join(dir, 'blobs'))), [], 'nothing left')
})

t.test('limits.unused_blob_ttl: 24 h by default', async (t) => {
  const { resolveConfig } = await import('../../../core/platform/config.js')
  t.equal(resolveConfig([]).limits.unusedBlobMs, 24 * 3_600_000)
})
