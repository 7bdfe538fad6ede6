import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { buildApp } from '../../core/server/app.js'
import { resolveConfig } from '../../core/platform/config.js'
import { ModelStore } from '../../plugins/storage/model-store.js'
import { writeTinyGguf } from '../fixtures/tiny-model.js'
import { percentile } from '../stats.js'

export interface TagsBench {
  models: number
  /** Size of one /api/tags answer. */
  bytes: number
  p50_ms: number
  p99_ms: number
  /** The same for GET /v1/models. */
  v1_p50_ms: number
  v1_p99_ms: number
  /** The store's one scan of the models folder at start (1,000 manifests). */
  scan_ms: number
  /** From buildApp to ready: the scan and every other plugin. */
  startup_ms: number
}

/** Median and p99 of `requests` GETs of `url`, one after the other over one keep-alive connection. */
async function timeGets (url: string, requests: number): Promise<{ p50: number, p99: number, bytes: number }> {
  const times: number[] = []
  let bytes = 0
  for (let i = 0; i < requests + 10; i++) {
    const started = performance.now()
    const res = await fetch(url)
    const body = await res.arrayBuffer()
    if (!res.ok) throw new Error(`${url} answered ${res.status}`)
    if (i >= 10) times.push(performance.now() - started) // the first few warm the JIT
    bytes = body.byteLength
  }
  return { p50: percentile(times, 50), p99: percentile(times, 99), bytes }
}

/**
 * `GET /api/tags` and `GET /v1/models` with 1,000 models (imported links to one tiny GGUF), over a real
 * socket: the records are cached in memory, so the cost is serialising them. Median and p99 of 200 requests.
 */
export async function benchTags (count = 1000, requests = 200): Promise<TagsBench> {
  const dir = await mkdtemp(join(tmpdir(), 'llamagate-bench-tags-'))
  try {
    const { file } = await writeTinyGguf({ file: join(dir, 'tiny.gguf') })
    const store = new ModelStore(join(dir, 'models'))
    await store.init()
    // Eight imports at a time (each model has a lock of its own): the imports wait on the disk more than they
    // compute, and one after another they took 1-2 minutes on 2 cores; this is the setup, not what is measured.
    let next = 0
    await Promise.all(Array.from({ length: 8 }, async () => {
      while (next < count) await store.import(`bench/model-${String(next++).padStart(4, '0')}`, file)
    }))
    const scanStarted = performance.now()
    await new ModelStore(join(dir, 'models')).init()
    const scan = performance.now() - scanStarted
    const started = performance.now()
    const app = await buildApp(resolveConfig([{ source: 'bench', values: { data_dir: dir, models_dir: join(dir, 'models'), log_level: 'warn', ollama_listen: 'off' } }]))
    await app.ready()
    const startup = performance.now() - started
    try {
      const url = await app.listen({ host: '127.0.0.1', port: 0 })
      if (app.store.list().length !== count) throw new Error(`the app lists ${app.store.list().length} models, not ${count}`)
      const tags = await timeGets(`${url}/api/tags`, requests)
      const v1 = await timeGets(`${url}/v1/models`, requests)
      return { models: count, bytes: tags.bytes, p50_ms: tags.p50, p99_ms: tags.p99, v1_p50_ms: v1.p50, v1_p99_ms: v1.p99, scan_ms: scan, startup_ms: startup }
    } finally {
      await app.close()
    }
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const r = await benchTags()
  process.stdout.write(`GET /api/tags with ${r.models} models (${(r.bytes / 1024).toFixed(0)} KiB): p50 ${r.p50_ms.toFixed(2)} ms, p99 ${r.p99_ms.toFixed(2)} ms\n`)
  process.stdout.write(`GET /v1/models: p50 ${r.v1_p50_ms.toFixed(2)} ms, p99 ${r.v1_p99_ms.toFixed(2)} ms; folder scan ${r.scan_ms.toFixed(0)} ms, app startup ${r.startup_ms.toFixed(0)} ms\n`)
  process.stdout.write(`${JSON.stringify(r)}\n`)
}
