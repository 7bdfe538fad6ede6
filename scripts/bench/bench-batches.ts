import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import type { RuntimeBuild } from '../../runtimes/types.js'
import { PEOPLE_HOLD_MS } from '../../plugins/leases/key-line.js'
import { writeTinyGguf } from '../fixtures/tiny-model.js'
import { percentile } from '../stats.js'
import { killAll, startGateway } from './bench-setups.js'

/**
 * The batches scenario, on tiny models with 4 slots: a person's short streamed chat every `everyMs`, alone and
 * beside a background batch of `requests` on the same model (time to first token, p50 and p95, the rounds side by
 * side); the batch alone against the same requests sent straight at the gateway, 4 at once (wall time); and a batch
 * across three models that do not fit together (how many times each loads).
 */
export interface BatchesOptions {
  build: RuntimeBuild
  dir: string
  /** Requests in each batch. */
  requests: number
  /** A person's requests per round, and the time between them. */
  people: number
  everyMs: number
  rounds: number
  threads?: number
  say: (line: string) => void
}

const SLOTS = 4
/** A background answer's length beside a person: 500 of them outlast a round of a person's requests. */
const BESIDE_TOKENS = 1536
const TINY = { nEmbd: 64, nLayer: 2, nFf: 128, nHead: 4, nCtxTrain: 4096 }

export async function benchBatches (o: BatchesOptions): Promise<Record<string, unknown>> {
  const files: Record<string, string> = {}
  for (const name of ['a', 'b', 'c']) files[`acme/${name}`] = (await writeTinyGguf({ file: join(o.dir, `${name}.gguf`), ...TINY, name, seed: name.charCodeAt(0) })).file
  const shape = { ctxPerSlot: 2048, parallel: SLOTS, ...(o.threads !== undefined ? { threads: o.threads } : {}) }
  const one = await startGateway(join(o.dir, 'one'), o.build, { 'acme/a': files['acme/a']! }, shape, { limits: `batch_concurrency: ${SLOTS}` })
  const report: Record<string, unknown> = {}
  try {
    const url = one.url
    const lines = (tag: string, maxTokens = 32): string[] => Array.from({ length: o.requests }, (_, i) =>
      JSON.stringify({ custom_id: `${tag}-${i}`, method: 'POST', url: '/v1/completions', body: { model: 'acme/a', prompt: `background request ${tag} ${i}: summarise the ticket`, max_tokens: maxTokens, ignore_eos: true } }))
    const alone: number[] = []
    const beside: number[] = []
    const batchWall: number[] = []
    const directWall: number[] = []
    const overlapped: boolean[] = []
    // The batch's wall time with nobody else on the machine, against the same requests sent straight: twice as many
    // rounds as the person's, each pair in turns of order (a machine's drift falls on both); the batch after a quiet
    // spell as long as the people hold (a person's recent request keeps half the slots free of background work).
    // Both paths warm first, the model loaded by the first (a first batch after a start paid 10-20 % more: code not
    // yet compiled hot).
    await direct(url, lines('warm-direct').slice(0, 100), SLOTS)
    await waitFor(url, await submit(url, lines('warm').slice(0, 100)), (b) => b.status === 'completed')
    for (let round = 0; round < 2 * o.rounds; round++) {
      const timeBatch = async (): Promise<void> => {
        await sleep(PEOPLE_HOLD_MS)
        const started = performance.now()
        await waitFor(url, await submit(url, lines(`alone${round}`)), (b) => b.status === 'completed')
        batchWall.push(performance.now() - started)
      }
      if (round % 2 === 1) directWall.push(await direct(url, lines(`direct${round}`), SLOTS))
      await timeBatch()
      if (round % 2 === 0) directWall.push(await direct(url, lines(`direct${round}`), SLOTS))
    }
    for (let round = 0; round < o.rounds; round++) {
      alone.push(...await person(url, o.people, o.everyMs))
      // Beside a batch that is running (answers long enough that it still runs when the person is done), in the
      // slots the person does not take.
      const running = await submit(url, lines(`beside${round}`, BESIDE_TOKENS))
      await waitFor(url, running, (b) => b.request_counts.completed >= SLOTS)
      beside.push(...await person(url, o.people, o.everyMs))
      // The person's requests ran beside the batch only if it was still running when they ended.
      const after = await cancel(url, running)
      overlapped.push(after.status === 'cancelled')
    }
    const ttft = (v: number[]) => ({ median_ms: round(percentile(v, 50)), p95_ms: round(percentile(v, 95)) })
    report.person_ttft = { alone: ttft(alone), beside_batch: ttft(beside), p95_ratio: round(percentile(beside, 95) / percentile(alone, 95)), batch_ran_throughout: overlapped.every(Boolean) }
    // The ratio is the median of each round's: a round's two runs are side by side, where the machine's drift over
    // the scenario falls between rounds.
    const pairs = batchWall.map((b, i) => b / directWall[i]!)
    report.batch_wall = {
      batch_ms: round(percentile(batchWall, 50)), direct_ms: round(percentile(directWall, 50)), ratio: round(percentile(pairs, 50)),
      rounds: batchWall.map((b, i) => ({ batch_ms: round(b), direct_ms: round(directWall[i]!), ratio: round(pairs[i]!) })),
    }
    o.say(`a person's time to first token: alone ${ttft(alone).median_ms} ms (p95 ${ttft(alone).p95_ms}), beside a batch ${ttft(beside).median_ms} ms (p95 ${ttft(beside).p95_ms}): p95 ratio ${(report.person_ttft as { p95_ratio: number }).p95_ratio}`)
    o.say(`${o.requests} requests: as a batch ${(report.batch_wall as { batch_ms: number }).batch_ms} ms, straight at the gateway ${SLOTS} at once ${(report.batch_wall as { direct_ms: number }).direct_ms} ms: ratio ${(report.batch_wall as { ratio: number }).ratio} (the median of each round's: ${pairs.map(round).join(', ')})`)
  } finally {
    killAll([one.child])
  }
  // Three models, room for one: the batch's lines interleaved across them.
  const three = await startGateway(join(o.dir, 'three'), o.build, files, shape, { maxLoaded: 1, limits: `batch_concurrency: ${SLOTS}` })
  try {
    const models = Object.keys(files)
    const mixed = Array.from({ length: 60 }, (_, i) => JSON.stringify({ custom_id: `m-${i}`, method: 'POST', url: '/v1/completions', body: { model: models[i % 3], prompt: `request ${i}`, max_tokens: 8 } }))
    const started = performance.now()
    const batch = await waitFor(three.url, await submit(three.url, mixed), (b) => b.status === 'completed')
    const log = await readFile(join(o.dir, 'three', 'llamagate.log'), 'utf8')
    const loads = Object.fromEntries(models.map((m) => [m, log.split('\n').filter((l) => l.includes('"msg":"model loaded"') && l.includes(`"model":"${m}"`)).length]))
    report.three_models = { requests: 60, completed: batch.request_counts.completed, loads, wall_ms: round(performance.now() - started) }
    o.say(`a batch of 60 across 3 models that do not fit together: loads ${JSON.stringify(loads)}, ${batch.request_counts.completed} answered`)
  } finally {
    killAll([three.child])
  }
  return { model: 'tiny (64 wide, 2 layers)', slots: SLOTS, requests: o.requests, people: o.people, every_ms: o.everyMs, rounds: o.rounds, ...report }
}

interface Batch { id: string, status: string, request_counts: { total: number, completed: number, failed: number } }

/** A person's streamed requests, one every `everyMs`: each one's time to its first token. */
async function person (url: string, count: number, everyMs: number): Promise<number[]> {
  const times: number[] = []
  for (let i = 0; i < count; i++) {
    const started = performance.now()
    times.push(await chat(url, 'acme/a', `a person's question ${i}`))
    await sleep(Math.max(0, everyMs - (performance.now() - started)))
  }
  return times
}

/** A person's short streamed chat (8 tokens): the ms to its first token. */
async function chat (url: string, model: string, content: string): Promise<number> {
  const started = performance.now()
  const res = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model, messages: [{ role: 'user', content }], max_tokens: 8, stream: true }) })
  if (res.status !== 200) throw new Error(`a chat answered ${res.status}: ${await res.text()}`)
  return await firstToken(res, started, '"content"')
}

/** Reads a stream to its end: the ms from `started` to the first chunk holding `marker`. */
async function firstToken (res: Response, started: number, marker: string): Promise<number> {
  const reader = res.body!.getReader()
  let first = 0
  let text = ''
  for (;;) {
    const { value, done } = await reader.read()
    if (done) return first
    text += Buffer.from(value).toString()
    if (first === 0 && text.includes(marker)) first = performance.now() - started
  }
}

async function submit (url: string, lines: string[]): Promise<Batch> {
  const form = new FormData()
  form.append('purpose', 'batch')
  form.append('file', new Blob([lines.join('\n') + '\n']), 'bench.jsonl')
  const file = await (await fetch(`${url}/v1/files`, { method: 'POST', body: form })).json() as { id: string }
  const res = await fetch(`${url}/v1/batches`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ input_file_id: file.id, endpoint: '/v1/completions', completion_window: '24h' }) })
  if (res.status !== 200) throw new Error(`a batch answered ${res.status}: ${await res.text()}`)
  return await res.json() as Batch
}

async function waitFor (url: string, batch: Batch, done: (b: Batch) => boolean): Promise<Batch> {
  for (;;) {
    const now = await (await fetch(`${url}/v1/batches/${batch.id}`)).json() as Batch
    if (done(now)) return now
    if (['failed', 'expired', 'cancelled'].includes(now.status)) throw new Error(`batch ${batch.id} ${now.status}`)
    await sleep(20)
  }
}

/** Cancels a batch (one already over stays as it is) and waits until it is over. */
async function cancel (url: string, batch: Batch): Promise<Batch> {
  await fetch(`${url}/v1/batches/${batch.id}/cancel`, { method: 'POST' })
  return await waitFor(url, batch, (b) => ['completed', 'cancelled'].includes(b.status))
}

/** The lines' requests sent straight at the gateway, `concurrency` at a time: the wall time. */
async function direct (url: string, lines: string[], concurrency: number): Promise<number> {
  const started = performance.now()
  let next = 0
  await Promise.all(Array.from({ length: concurrency }, async () => {
    for (let i = next++; i < lines.length; i = next++) {
      // The line's whole body, as the batch sends it.
      const { body } = JSON.parse(lines[i]!) as { body: Record<string, unknown> }
      const res = await fetch(`${url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ...body, stream: false }) })
      if (res.status !== 200) throw new Error(`completion answered ${res.status}: ${await res.text()}`)
      await res.arrayBuffer()
    }
  }))
  return performance.now() - started
}

function round (n: number): number { return Math.round(n * 1000) / 1000 }
