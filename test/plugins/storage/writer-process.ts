// A second llamagate process writing a model, for the cross-process tests (run with the test's execArgv):
//   writer-process.ts <modelsDir> <id> <mode> <source.gguf>
// Modes: `commit` waits for the lock, copies the GGUF in slow chunks, commits; `try` does the same without
// waiting (exit 3 on a conflict); `hang` takes the lock, writes half the file, says so and waits to be killed.
// Prints one JSON line per step on stdout.
import { open, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { ConflictError } from '../../../core/base/errors.js'
import { ModelStore } from '../../../plugins/storage/model-store.js'
import { sha256File } from '../../../plugins/storage/file-hash.js'

const [modelsDir, id, mode, source] = process.argv.slice(2) as [string, string, string, string]
const say = (event: Record<string, unknown>): void => { process.stdout.write(`${JSON.stringify({ pid: process.pid, ...event })}\n`) }

// The shortest staleness proper-lockfile allows: the lock's mtime is refreshed every second, so a test can
// tell a live holder's lock (fresh) from a killed one's (stale after 2 s).
const store = new ModelStore(modelsDir, { lockStaleMs: 2000 })
await store.init()
let writer
try {
  writer = await store.openWriter(id, { wait: mode !== 'try' })
} catch (err) {
  if (err instanceof ConflictError) {
    say({ event: 'conflict', message: err.message })
    process.exit(3)
  }
  throw err
}
say({ event: 'locked', at: Date.now() })
const data = await readFile(source)
const file = await open(join(writer.dir, 'model.gguf'), 'w')
// Slow, chunked writes: two unlocked writers would interleave their bytes.
const chunk = Math.ceil(data.length / 16)
for (let offset = 0; offset < data.length; offset += chunk) {
  await file.write(data, offset, Math.min(chunk, data.length - offset), offset)
  if (mode === 'hang' && offset >= data.length / 2) {
    await file.sync()
    say({ event: 'holding' })
    setInterval(() => {}, 1000)
    await new Promise(() => {})
  }
  await new Promise((resolve) => setTimeout(resolve, 5))
}
await file.close()
const sha256 = await sha256File(join(writer.dir, 'model.gguf'))
const record = await writer.commit({ name: id, format: 'gguf', source: { type: 'import', path: source }, files: [{ name: 'model.gguf', size: data.length, sha256 }], primary: 'model.gguf' })
say({ event: 'committed', at: Date.now(), sha256, modified_at: record.modified_at })
await writer.release()
