import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { buildApp } from '../core/app.js'
import { resolveConfig } from '../core/config.js'
import { ModelStore } from '../plugins/storage/model-store.js'
import { writeTinyGguf } from './tiny-model.js'
import { percentile } from './stats.js'

/**
 * `GET /api/tags` with 1,000 models, over a real socket: the records are cached in memory, so the cost is
 * serialising them. Prints the median and p99 of 200 requests.
 */
export async function benchTags (count = 1000, requests = 200): Promise<{ models: number, bytes: number, p50_ms: number, p99_ms: number }> {
  const dir = await mkdtemp(join(tmpdir(), 'llamagate-bench-tags-'))
  try {
    const { file } = await writeTinyGguf({ file: join(dir, 'tiny.gguf') })
    const store = new ModelStore(join(dir, 'models'))
    await store.init()
    for (let i = 0; i < count; i++) await store.import(`bench/model-${String(i).padStart(4, '0')}`, file)
    const app = await buildApp(resolveConfig([{ source: 'bench', values: { data_dir: dir, models_dir: join(dir, 'models'), log_level: 'warn' } }]))
    const url = await app.listen({ host: '127.0.0.1', port: 0 })
    const times: number[] = []
    let bytes = 0
    for (let i = 0; i < requests + 10; i++) {
      const started = performance.now()
      const res = await fetch(`${url}/api/tags`)
      const body = await res.arrayBuffer()
      if (i >= 10) times.push(performance.now() - started) // the first few warm the JIT
      bytes = body.byteLength
    }
    await app.close()
    return { models: count, bytes, p50_ms: percentile(times, 50), p99_ms: percentile(times, 99) }
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const result = await benchTags()
  process.stdout.write(`GET /api/tags with ${result.models} models (${(result.bytes / 1024).toFixed(0)} KiB): p50 ${result.p50_ms.toFixed(2)} ms, p99 ${result.p99_ms.toFixed(2)} ms\n`)
  process.stdout.write(`${JSON.stringify(result)}\n`)
}
