import { existsSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { FakeHub } from '../../test/helpers/fake-hub.js'
import { ACCOUNTED, lines, type RequestResult, type RequestSpec } from './soak-clients.js'
import { http, MARK_VAR, partialFiles, ps, tags } from './soak-probes.js'

// The faults the soak injects, one at a time, while the clients run: each does its harm, then checks that the
// gateway came through it as it should, and says so in a record.

export const FAULT_KINDS = ['kill_runtime', 'converter_run', 'pull_dropped_connections', 'delete_during_load', 'pull_client_left', 'pull_corrupt_file'] as const
export type FaultKind = (typeof FAULT_KINDS)[number]

/** The models the faults pull and delete (besides the three the clients chat with). */
export const FAULT_MODELS = { delta: 'soak/delta', epsilon: 'soak/epsilon', corrupt: 'soak/corrupt', converted: 'soak/tiny-hf' } as const

export interface FaultContext {
  base: string
  hub: FakeHub
  modelsDir: string
  /** The models whose llama-server kill_runtime may kill: only those whose requests may be cut (the ops key's). */
  killable: readonly string[]
  /** The soak's mark, which the gateway's processes carry in their environment. */
  mark: string
  /** SHA-256 of epsilon's GGUF: the file whose download is stalled while its client leaves. */
  epsilonSha: string
  rand: () => number
  /** Sends a request and counts it in the ledger like any client's. */
  request: (spec: RequestSpec) => Promise<RequestResult>
}

export interface FaultRecord {
  kind: FaultKind
  /** Seconds since the load started. */
  at_s: number
  ms: number
  /** Whether the gateway came through it as it should (what that means is in `detail`). */
  as_expected: boolean
  detail: string
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

async function waitFor (check: () => Promise<boolean>, timeoutMs: number, everyMs = 100): Promise<boolean> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    if (await check()) return true
    if (Date.now() > deadline) return false
    await sleep(everyMs)
  }
}

async function listed (base: string, name: string): Promise<boolean> {
  return (await tags(base)).some((t) => t.name === name)
}

async function call (base: string, method: string, path: string, body: unknown): Promise<{ status: number, text: string }> {
  const res = await http(`${base}${path}`, { method, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), signal: AbortSignal.timeout(120_000) })
  return { status: res.status, text: await res.text() }
}

interface PullOutcome { status: number, events: Array<Record<string, unknown>>, error: string | null, success: boolean }

/** A streamed (NDJSON) /api/pull, read to its end; `onEvent` may abort it through `signal`. */
async function pull (base: string, model: string, signal?: AbortSignal, onEvent?: (e: Record<string, unknown>) => void): Promise<PullOutcome> {
  const res = await http(`${base}/api/pull`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/x-ndjson' }, body: JSON.stringify({ model }), signal: signal ?? AbortSignal.timeout(300_000) })
  if (res.status !== 200) return { status: res.status, events: [], error: await res.text(), success: false }
  const events: Array<Record<string, unknown>> = []
  for await (const line of lines(res.body as AsyncIterable<Uint8Array>)) {
    if (line.trim() === '') continue
    const event = JSON.parse(line) as Record<string, unknown>
    events.push(event)
    onEvent?.(event)
  }
  const last = events.at(-1)
  return { status: 200, events, error: typeof last?.error === 'string' ? last.error : null, success: last?.status === 'success' }
}

async function removeIfListed (base: string, name: string): Promise<string | null> {
  if (!await listed(base, name)) return null
  const { status, text } = await call(base, 'DELETE', '/api/delete', { model: name })
  return status === 200 ? null : `could not delete ${name} first: ${status} ${text}`
}

/** Runs one fault of `kind` and checks the gateway came through it. */
export async function injectFault (kind: FaultKind, ctx: FaultContext): Promise<Omit<FaultRecord, 'at_s' | 'ms'>> {
  switch (kind) {
    case 'kill_runtime': return killRuntime(ctx)
    case 'converter_run': return converterRun(ctx)
    case 'pull_dropped_connections': return pullDropped(ctx)
    case 'delete_during_load': return deleteDuringLoad(ctx)
    case 'pull_client_left': return pullClientLeft(ctx)
    case 'pull_corrupt_file': return pullCorrupt(ctx)
  }
}

/**
 * SIGKILL to a llama-server while it streams an answer (the victim: a long streamed chat the fault sends
 * itself to one of `killable`, killed at its first event). The victim must end with an error event, the
 * instance must leave /api/ps, the process must be gone, and the next request to the model must load it
 * afresh and answer.
 * The pid is read from /api/ps before the victim is sent when the model is loaded (and checked in /proc to be
 * the gateway's llama-server still), so that the kill lands within milliseconds of the first event; a round
 * whose victim ended before any kill could land is tried again (3 rounds at most).
 */
async function killRuntime (ctx: FaultContext): Promise<Omit<FaultRecord, 'at_s' | 'ms'>> {
  const notes: string[] = []
  for (let round = 1; round <= 3; round++) {
    const model = ctx.killable[Math.floor(ctx.rand() * ctx.killable.length)]!
    const loadedPid = async (): Promise<number | null> => (await ps(ctx.base)).find((e) => e.name === model && e.purpose === 'generate' && e.state === 'loaded' && e.pid !== null)?.pid ?? null
    const known = await loadedPid()
    let killed: number | null = null
    let killing: Promise<void> | null = null
    const kill = async (): Promise<void> => {
      // The pid known before, if it still is this gateway's llama-server (an instance evicted meanwhile is gone).
      let pid = known !== null && await isOurLlamaServer(known, ctx.mark) ? known : null
      pid ??= await loadedPid()
      if (pid === null) return
      try { process.kill(pid, 'SIGKILL'); killed = pid } catch { /* gone */ }
    }
    const surface = ctx.rand() < 0.5 ? 'api/chat' as const : 'v1/chat/completions' as const
    const victim = await ctx.request({ surface, stream: true, model, maxTokens: 440, onEvent: (i) => { if (i === 1) killing = kill() } })
    await killing
    const pid = killed as number | null
    if (pid === null || victim.outcome === 'finished') {
      notes.push(`round ${round}: ${pid === null ? 'no instance to kill' : `pid ${pid} killed`} after the victim's first event, but the victim ${victim.outcome === 'finished' ? 'had finished' : `ended ${victim.outcome}`}`)
      if (pid === null) continue
    }
    const problems: string[] = []
    if (victim.outcome !== 'error_event' && victim.outcome !== 'finished') problems.push(`the victim ended ${victim.outcome} (${victim.reason ?? ''}), not with an error event`)
    const gone = await waitFor(async () => !(await ps(ctx.base)).some((e) => e.pid === pid), 10_000)
    if (!gone) problems.push(`pid ${pid} still in /api/ps 10 s after it was killed`)
    const dead = await waitFor(async () => !existsSync(`/proc/${pid}`), 5_000)
    if (!dead) problems.push(`pid ${pid} still in /proc 5 s after SIGKILL (not reaped)`)
    const next = await ctx.request({ surface: 'api/chat', stream: false, model, maxTokens: 8 })
    if (next.outcome !== 'finished') problems.push(`the next request to ${model} ended ${next.outcome} (${next.status ?? ''} ${next.reason ?? ''})`)
    if (victim.outcome === 'finished' && problems.length === 0) continue // killed, but not mid-answer: once more
    const how = victim.outcome === 'finished' ? 'had finished' : victim.outcome === 'error_event' ? `ended with an error event: "${victim.reason}"` : `ended ${victim.outcome}`
    return {
      kind: 'kill_runtime',
      as_expected: problems.length === 0,
      detail: `${model} pid ${pid} killed at the victim's first event; the victim (${surface}) ${how}; ${problems.length === 0 ? 'gone from /api/ps and /proc, the next request reloaded it and finished' : problems.join('; ')}${notes.length > 0 ? ` (${notes.join('; ')})` : ''}`,
    }
  }
  return { kind: 'kill_runtime', as_expected: false, detail: `no llama-server could be killed mid-answer in 3 rounds: ${notes.join('; ')}` }
}

/** Whether `pid` is a llama-server this gateway started (it carries the soak's mark). */
async function isOurLlamaServer (pid: number, mark: string): Promise<boolean> {
  try {
    const [comm, environ] = await Promise.all([readFile(`/proc/${pid}/comm`, 'utf8'), readFile(`/proc/${pid}/environ`, 'latin1')])
    return comm.trim() === 'llama-server' && environ.includes(`${MARK_VAR}=${mark}\0`)
  } catch {
    return false
  }
}

/**
 * A pull of a SafeTensors repository, which runs the real converter (convert_hf_to_gguf.py) at its end; then
 * a chat with the converted model. Deleted first when a previous round left it.
 */
async function converterRun (ctx: FaultContext): Promise<Omit<FaultRecord, 'at_s' | 'ms'>> {
  const name = FAULT_MODELS.converted
  const status = JSON.parse((await call(ctx.base, 'GET', '/api/convert/status', undefined).catch(() => ({ text: '{}' }))).text || '{}') as { ready?: boolean, problems?: string[] }
  if (status.ready !== true) return { kind: 'converter_run', as_expected: false, detail: `the converter is not ready here: ${(status.problems ?? []).join('; ')} (run npm run setup:converter or install python3-torch)` }
  const cleared = await removeIfListed(ctx.base, name)
  if (cleared !== null) return { kind: 'converter_run', as_expected: false, detail: cleared }
  const pulled = await pull(ctx.base, name)
  const converted = pulled.events.some((e) => typeof e.status === 'string' && e.status.startsWith('converting to gguf'))
  if (!pulled.success || !converted) return { kind: 'converter_run', as_expected: false, detail: `pull of ${name}: ${pulled.status} ${pulled.error ?? ''} (conversion reported: ${converted})` }
  const chat = await ctx.request({ surface: 'api/chat', stream: false, model: name, maxTokens: 8 })
  return { kind: 'converter_run', as_expected: chat.outcome === 'finished', detail: `pulled and converted to f16; a chat with it ${chat.outcome}${chat.reason ? ` (${chat.reason})` : ''}` }
}

/** A pull whose CDN connection is dropped twice part-way: it must resume (Range) and finish whole. */
async function pullDropped (ctx: FaultContext): Promise<Omit<FaultRecord, 'at_s' | 'ms'>> {
  const name = FAULT_MODELS.delta
  const cleared = await removeIfListed(ctx.base, name)
  if (cleared !== null) return { kind: 'pull_dropped_connections', as_expected: false, detail: cleared }
  // Two drops well inside the file (about 320 KB), so that each costs a resume.
  const dropAfter = 20_000 + Math.floor(ctx.rand() * 80_000)
  const rangesBefore = ctx.hub.cdnRanges.length
  ctx.hub.faults.dropAfterBytes = dropAfter
  ctx.hub.faults.drops = 2
  let pulled: PullOutcome
  try {
    pulled = await pull(ctx.base, name)
  } finally {
    delete ctx.hub.faults.dropAfterBytes
    delete ctx.hub.faults.drops
  }
  const resumes = ctx.hub.cdnRanges.slice(rangesBefore).filter((r) => r !== 'bytes=0-').length
  const ok = pulled.success && resumes >= 2 && await listed(ctx.base, name)
  return { kind: 'pull_dropped_connections', as_expected: ok, detail: `connection dropped twice after ${dropAfter} bytes: ${pulled.success ? 'the pull succeeded' : `the pull failed: ${pulled.status} ${pulled.error}`}, ${resumes} ranged resume(s)${ok ? ', listed whole' : ''}` }
}

/**
 * Two streamed chats make an unloaded model load; while /api/ps shows it loading, DELETE it. The delete must
 * succeed, the model leave /api/tags, /api/ps and the disk, and both chats end (error or answer), none hung.
 */
async function deleteDuringLoad (ctx: FaultContext): Promise<Omit<FaultRecord, 'at_s' | 'ms'>> {
  const name = FAULT_MODELS.delta
  if (!await listed(ctx.base, name)) {
    const pulled = await pull(ctx.base, name)
    if (!pulled.success) return { kind: 'delete_during_load', as_expected: false, detail: `could not pull ${name} first: ${pulled.error}` }
  }
  if ((await ps(ctx.base)).some((e) => e.name === name)) await call(ctx.base, 'POST', '/api/stop', { model: name })
  const chats = [
    ctx.request({ surface: 'api/chat', stream: true, model: name, maxTokens: 64 }),
    ctx.request({ surface: 'v1/chat/completions', stream: true, model: name, maxTokens: 64 }),
  ]
  let state = 'not listed'
  await waitFor(async () => {
    state = (await ps(ctx.base)).find((e) => e.name === name)?.state ?? 'not listed'
    return state !== 'not listed'
  }, 5_000, 2)
  const deleted = await call(ctx.base, 'DELETE', '/api/delete', { model: name })
  const results = await Promise.all(chats)
  const problems: string[] = []
  if (deleted.status !== 200) problems.push(`DELETE answered ${deleted.status} ${deleted.text}`)
  else {
    if (await listed(ctx.base, name)) problems.push('still in /api/tags after the delete')
    if (existsSync(join(ctx.modelsDir, name))) problems.push('its folder is still on disk')
  }
  if (!await waitFor(async () => !(await ps(ctx.base)).some((e) => e.name === name), 10_000)) problems.push('still in /api/ps 10 s after the delete')
  const unaccounted = results.filter((r) => !ACCOUNTED.has(r.outcome))
  if (unaccounted.length > 0) problems.push(`chats ended ${unaccounted.map((r) => `${r.outcome} (${r.reason})`).join(', ')}`)
  const outcomes = results.map((r) => r.outcome === 'finished' ? 'finished' : `${r.outcome} "${r.reason}"`).join(' / ')
  return { kind: 'delete_during_load', as_expected: problems.length === 0, detail: `DELETE ${deleted.status} while the model was ${state}; chats: ${outcomes}${problems.length > 0 ? `; ${problems.join('; ')}` : ''}` }
}

/**
 * A pull whose download stalls part-way (the CDN sends 64 KiB and waits), left by its client once bytes
 * came: the model must not be listed, the partial file kept; the next pull resumes it with a Range and
 * finishes whole.
 */
async function pullClientLeft (ctx: FaultContext): Promise<Omit<FaultRecord, 'at_s' | 'ms'>> {
  const name = FAULT_MODELS.epsilon
  const cleared = await removeIfListed(ctx.base, name)
  if (cleared !== null) return { kind: 'pull_client_left', as_expected: false, detail: cleared }
  ctx.hub.faults.stallAfterBytes = 64 * 1024
  ctx.hub.faults.stallShas = new Set([ctx.epsilonSha])
  const controller = new AbortController()
  const giveUp = setTimeout(() => controller.abort(new Error('no download in 30 s')), 30_000)
  const sentBefore = ctx.hub.cdnBytes.get(ctx.epsilonSha) ?? 0
  let leaving: NodeJS.Timeout | undefined
  try {
    // The gateway reports a file's progress at most every 100 ms, and nothing comes while the CDN stalls: the
    // client leaves a moment after the download has started, once the CDN has sent its 64 KiB.
    await pull(ctx.base, name, controller.signal, (e) => {
      if (leaving === undefined && typeof e.status === 'string' && e.status.startsWith('downloading ')) {
        leaving = setTimeout(() => controller.abort(new Error('the client leaves')), 300)
      }
    })
  } catch { /* the client left */ }
  clearTimeout(giveUp)
  clearTimeout(leaving)
  const sent = (ctx.hub.cdnBytes.get(ctx.epsilonSha) ?? 0) - sentBefore
  delete ctx.hub.faults.stallAfterBytes
  delete ctx.hub.faults.stallShas
  const problems: string[] = []
  if (leaving === undefined) problems.push('the download never started')
  await sleep(200)
  if (await listed(ctx.base, name)) problems.push('listed after its client left mid-download')
  const kept = (await partialFiles(ctx.modelsDir)).some((f) => f.startsWith(name))
  const rangesBefore = ctx.hub.cdnRanges.length
  const again = await pull(ctx.base, name)
  const resumedFrom = ctx.hub.cdnRanges.slice(rangesBefore).map((r) => Number(/bytes=(\d+)-/.exec(r)?.[1] ?? 0)).find((n) => n > 0)
  if (!again.success) problems.push(`the pull after failed: ${again.status} ${again.error}`)
  else if (!await listed(ctx.base, name)) problems.push('not listed after the second pull succeeded')
  return {
    kind: 'pull_client_left',
    as_expected: problems.length === 0,
    detail: `client left after the CDN had sent ${sent} bytes (partial file ${kept ? 'kept' : 'not found'}); the next pull ${again.success ? 'succeeded' : 'failed'}${resumedFrom !== undefined ? `, resumed from byte ${resumedFrom}` : ', from the start'}${problems.length > 0 ? `; ${problems.join('; ')}` : ''}`,
  }
}

/** A pull whose file arrives with wrong bytes: it must fail with the checksum error and list nothing. */
async function pullCorrupt (ctx: FaultContext): Promise<Omit<FaultRecord, 'at_s' | 'ms'>> {
  const name = FAULT_MODELS.corrupt
  const pulled = await pull(ctx.base, name)
  const problems: string[] = []
  if (pulled.success) problems.push('the pull SUCCEEDED with corrupt bytes')
  else if (!/SHA-256/.test(pulled.error ?? '')) problems.push(`failed, but not with the checksum error: ${pulled.status} ${pulled.error}`)
  if (await listed(ctx.base, name)) problems.push('it is listed')
  const left = (await partialFiles(ctx.modelsDir)).filter((f) => f.startsWith(name))
  if (left.length > 0) problems.push(`left ${left.join(', ')}`)
  return { kind: 'pull_corrupt_file', as_expected: problems.length === 0, detail: problems.length === 0 ? `failed as it should: "${pulled.error}"; not listed, nothing left` : problems.join('; ') }
}
