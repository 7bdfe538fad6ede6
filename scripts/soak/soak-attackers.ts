import { createHash, randomBytes } from 'node:crypto'
import type { AttackResult, AttackWorker } from './soak-attack-kinds.js'
import type { CacheWriter } from './soak-cache-writer.js'
import { upstreamAttacker } from './soak-hostile-upstream.js'
import { RawConnection } from './soak-raw-connection.js'
import { gatewaySideState, http } from './soak-probes.js'
import { quotaDodger } from './soak-quota-dodger.js'

// The hostile soak's attackers: each attempt does its harm once and says what the gateway answered,
// and whether that was the refusal docs/operations.md ("Limits against hostile and careless clients") promises.
// Three more, each in a file of its own: a hostile upstream, a quota dodger and a cache-folder writer.

export interface AttackContext {
  base: string
  port: number
  /** The soak's own key (ops: every scope, every model, no limits). */
  key: string
  /** The key that may use the hostile upstream's models only, and the upstream's own key, which it must never see. */
  relay: { key: string, upstreamKey: string }
  /** The key with a day of tokens, on the long model. */
  dodgerKey: string
  /** The cache-folder writer, whose first round was planted before the gateway started. */
  cacheWriter: CacheWriter
  /** The models the normal clients chat with (the refusals name one, so that only the refusal stops them). */
  chatModels: readonly string[]
  /** A long-context model: the normal ones' 256 tokens a slot cannot fill a socket's buffers. */
  longModel: string
  bodyTimeoutMs: number
  stallTimeoutMs: number
  idleConnections: number
  /** The attack's end: idle connections are let go at it. */
  deadline: number
  rand: () => number
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))
const pick = <T>(rand: () => number, items: readonly T[]): T => items[Math.floor(rand() * items.length)]!

/**
 * The attackers, each kind in a loop of its own. The pauses keep each kind going for the whole run without
 * turning it into a flood of one kind alone: the point is that the normal clients are served meanwhile.
 */
export function attackWorkers (ctx: AttackContext): AttackWorker[] {
  const flood = new BlobFlood(ctx)
  return [
    { kind: 'slow_body', attempt: () => slowBody(ctx, true), pauseMs: 0 },
    { kind: 'slow_body', attempt: () => slowBody(ctx, true), pauseMs: 0 },
    { kind: 'slow_body', attempt: () => slowBody(ctx, false), pauseMs: 500 },
    { kind: 'slow_body', attempt: () => slowBody(ctx, false), pauseMs: 500 },
    // Two: both slots of the long model held by clients that read nothing.
    { kind: 'non_reader', attempt: () => nonReader(ctx), pauseMs: 0 },
    { kind: 'non_reader', attempt: () => nonReader(ctx), pauseMs: 0 },
    { kind: 'schema_bomb', attempt: () => schemaBomb(ctx), pauseMs: 250 },
    { kind: 'refused_field', attempt: () => refusedField(ctx), pauseMs: 100 },
    { kind: 'blob_flood', attempt: () => flood.round(), pauseMs: 500, finish: () => flood.deleteKept() },
    { kind: 'idle_connections', attempt: () => idleConnections(ctx), pauseMs: 0 },
    upstreamAttacker(ctx.base, ctx.relay.key, ctx.relay.upstreamKey),
    quotaDodger(ctx.base, ctx.dodgerKey, ctx.longModel, ctx.rand),
    ctx.cacheWriter.worker(ctx.rand),
  ]
}

/** `<status> <code>` of an error answer: OpenAI's code, or the code the native and Anthropic words stand for. */
export function answerOf (status: number, text: string): string {
  let body: unknown = null
  try { body = JSON.parse(text) } catch { /* not JSON */ }
  const error = (body as { error?: unknown } | null)?.error
  const code = (error as { code?: unknown } | undefined)?.code
  if (typeof code === 'string') return `${status} ${code}`
  const words = typeof error === 'string' ? error : typeof (error as { message?: unknown } | undefined)?.message === 'string' ? (error as { message: string }).message : text
  const known: Array<[RegExp, string]> = [
    [/\(limits\.schema_(size|alternatives)\)/, 'schema_too_large'], [/is not accepted here/, 'unsupported_parameter'],
    [/nested more than \d+ levels/, 'too_deep'], [/digest mismatch/, 'digest_mismatch'], [/API key/, 'unauthorized'],
  ]
  const found = known.find(([pattern]) => pattern.test(words))
  return `${status}${found ? ` ${found[1]}` : words === '' ? '' : ` "${words.replace(/\d+/g, 'N').slice(0, 80)}"`}`
}

/**
 * A POST through the soak's pool. A 408 is Node closing a connection it judged silent past limits.header_timeout,
 * which a request sent on it at that moment reads as its answer: RFC 9110 (15.5.9) lets the client send it again,
 * once, on another connection. The answer then says so, so that the ledger shows how often that happened.
 */
async function post (ctx: AttackContext, path: string, body: string): Promise<{ answer: string, ms: number, sentAgain: string }> {
  const t0 = performance.now()
  const send = async (): Promise<{ status: number, answer: string }> => {
    const res = await http(`${ctx.base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body, signal: AbortSignal.timeout(60_000) })
    const text = await res.text()
    return { status: res.status, answer: res.status < 300 ? String(res.status) : answerOf(res.status, text) }
  }
  const first = await send()
  if (first.status !== 408) return { answer: first.answer, ms: performance.now() - t0, sentAgain: '' }
  const again = await send()
  return { answer: again.answer, ms: performance.now() - t0, sentAgain: ', sent again after a 408 on a connection Node timed out' }
}

const SLOW_PATHS = ['/api/chat', '/v1/chat/completions', '/v1/messages'] as const

/**
 * A head that promises 100,000 bytes, then a byte every few seconds. With a key: cut at limits.body_timeout,
 * nothing answered (there is no whole request to answer). Without: 401 at once, the connection closed unread.
 */
async function slowBody (ctx: AttackContext, withKey: boolean): Promise<AttackResult[]> {
  const path = pick(ctx.rand, SLOW_PATHS)
  const variant = `${withKey ? 'with a key' : 'without a key'}, ${path}`
  const result = (answer: string, expected: boolean, ms: number): AttackResult[] => [{ kind: 'slow_body', variant, answer, expected, ms }]
  const conn = new RawConnection(ctx.port)
  try {
    if (await conn.localPort === null) return result(`connect failed (${(await conn.closed).error})`, false, 0)
    conn.sendHead(path, 100_000, withKey ? { Authorization: `Bearer ${ctx.key}` } : {}, `{"model":"${ctx.chatModels[0]}","messages":[`)
    // JSON allows white space anywhere: the body stays valid, only slow.
    const trickle = setInterval(() => { if (conn.text() === '') conn.write(' ') }, Math.min(2000, ctx.bodyTimeoutMs / 3))
    const end = await conn.closedWithin(ctx.bodyTimeoutMs + 15_000)
    clearInterval(trickle)
    const status = conn.status()
    if (end === null) return result(`still open ${Math.round(ctx.bodyTimeoutMs / 1000) + 15} s on`, false, ctx.bodyTimeoutMs + 15_000)
    if (withKey) {
      if (status !== null) return result(`${status} before its body was whole`, false, end.afterMs)
      return end.afterMs >= ctx.bodyTimeoutMs * 0.9
        ? result('cut at body_timeout, nothing answered', true, end.afterMs)
        : result('cut before body_timeout', false, end.afterMs)
    }
    const closes = /\r\nconnection: close\r\n/i.test(conn.text())
    if (status === 401 && closes && end.afterMs < 10_000) return result('401, connection closed', true, end.afterMs)
    return result(status === null ? 'closed with nothing answered' : `${status}${closes ? ', connection closed' : ', connection left open'} after ${Math.round(end.afterMs / 1000)} s`, false, end.afterMs)
  } finally {
    conn.destroy()
  }
}

const NON_READER_SURFACES = ['/v1/chat/completions', '/v1/completions'] as const

/**
 * A long streamed answer (8,000 tokens, 20 alternatives a token: over a kilobyte an event) whose client never
 * reads. The gateway must close it at limits.stream_stall_timeout without its last event. The client cannot
 * see that without reading, so it watches the gateway's end of the connection in the kernel's table, then reads.
 */
async function nonReader (ctx: AttackContext): Promise<AttackResult[]> {
  const path = pick(ctx.rand, NON_READER_SURFACES)
  const common = { model: ctx.longModel, stream: true, max_tokens: 8000, ignore_eos: true }
  const body = JSON.stringify(path === '/v1/chat/completions'
    ? { ...common, messages: [{ role: 'user', content: 'Tell me everything.' }], logprobs: true, top_logprobs: 20 }
    : { ...common, prompt: 'Tell me everything.', logprobs: 20 })
  const result = (answer: string, expected: boolean, ms: number): AttackResult[] => [{ kind: 'non_reader', variant: path, answer, expected, ms }]
  const conn = new RawConnection(ctx.port, { read: false })
  try {
    const local = await conn.localPort
    if (local === null) return result(`connect failed (${(await conn.closed).error})`, false, 0)
    const t0 = Date.now()
    conn.sendHead(path, Buffer.byteLength(body), { Authorization: `Bearer ${ctx.key}` }, body)
    // The model may have to load and 4 MB to back up first: a generous bound, past which it was never cut. The
    // kernel's table, read while it changes, may skip a line (with hundreds of idle connections coming and going,
    // 3 reads in a row did): an end missing from it counts once missed for 3 s.
    const limitMs = ctx.stallTimeoutMs + 90_000
    let closing = false
    for (let missed = 0; !closing && missed < 15 && Date.now() - t0 < limitMs;) {
      await sleep(200)
      const state = await gatewaySideState(ctx.port, local)
      missed = state === null ? missed + 1 : 0
      closing = state !== null && state !== 'established'
    }
    const cutMs = Date.now() - t0
    const end = await conn.readToEnd(15_000)
    const text = conn.text()
    const status = conn.status()
    if (cutMs >= limitMs) return result(`not cut within ${Math.round(limitMs / 1000)} s`, false, cutMs)
    if (status !== null && status !== 200) return result(answerOf(status, text.slice(text.indexOf('\r\n\r\n') + 4)), false, cutMs)
    if (end === null) return result('still streaming once read', false, cutMs)
    if (/^data: \[DONE\]/m.test(text)) return result('read to its end: never cut', false, cutMs)
    if (status === null || !/^data: \{/m.test(text)) return result('closed before any event', false, cutMs)
    return cutMs >= ctx.stallTimeoutMs * 0.9
      ? result('200, cut at stream_stall_timeout without its last event', true, cutMs)
      : result('200, cut sooner than stream_stall_timeout', false, cutMs)
  } finally {
    conn.destroy()
  }
}

interface Bomb { variant: string, path: string, body: string, expect: string }
let bombs: Bomb[] | null = null

/**
 * Output constraints no grammar compiler should be handed: a 50,000-value enum (in `format` and in
 * `response_format`), 2,000 values (small in bytes, many alternatives), a tool schema of 3,000 properties, and
 * one nested 200 deep (refused before parsing, by the body's depth).
 */
function schemaBombs (model: string): Bomb[] {
  const values = (n: number): string[] => Array.from({ length: n }, (_, i) => `v${i}`)
  const messages = [{ role: 'user', content: 'Pick one.' }]
  let deep: unknown = { type: 'string' }
  for (let i = 0; i < 200; i++) deep = { type: 'object', properties: { a: deep } }
  const wide = { type: 'object', properties: Object.fromEntries(Array.from({ length: 3000 }, (_, i) => [`p${i}`, { type: 'string', description: 'a field' }])) }
  return [
    { variant: 'format: 50,000-value enum (/api/chat)', path: '/api/chat', body: JSON.stringify({ model, messages, stream: false, format: { type: 'string', enum: values(50_000) } }), expect: '400 schema_too_large' },
    { variant: 'response_format: 50,000-value enum (/v1/chat/completions)', path: '/v1/chat/completions', body: JSON.stringify({ model, messages, response_format: { type: 'json_schema', json_schema: { name: 'pick', schema: { type: 'object', properties: { pick: { enum: values(50_000) } } } } } }), expect: '400 schema_too_large' },
    { variant: 'format: 2,000-value enum (/api/generate)', path: '/api/generate', body: JSON.stringify({ model, prompt: 'Pick one.', stream: false, format: { enum: values(2_000) } }), expect: '400 schema_too_large' },
    { variant: 'tool schema of 3,000 properties (/v1/chat/completions)', path: '/v1/chat/completions', body: JSON.stringify({ model, messages, tools: [{ type: 'function', function: { name: 'fill', parameters: wide } }] }), expect: '400 schema_too_large' },
    { variant: 'format nested 200 deep (/api/chat)', path: '/api/chat', body: JSON.stringify({ model, messages, stream: false, format: deep }), expect: '400 too_deep' },
  ]
}

async function schemaBomb (ctx: AttackContext): Promise<AttackResult[]> {
  bombs ??= schemaBombs(ctx.chatModels[0]!)
  const bomb = pick(ctx.rand, bombs)
  const { answer, ms, sentAgain } = await post(ctx, bomb.path, bomb.body)
  return [{ kind: 'schema_bomb', variant: `${bomb.variant}${sentAgain}`, answer, expected: answer === bomb.expect, ms }]
}

/** llama-server's own body fields that step around the gateway: each a 400 naming it, before a slot is taken. */
const REFUSED_FIELDS: ReadonlyArray<{ variant: string, path: string, fields: Record<string, unknown> }> = [
  { variant: 'n_cmpl: 4 (/v1/chat/completions)', path: '/v1/chat/completions', fields: { n_cmpl: 4 } },
  { variant: 'n_cmpl: 4 (/v1/completions)', path: '/v1/completions', fields: { n_cmpl: 4 } },
  { variant: 'id_slot: 0 (/v1/chat/completions)', path: '/v1/chat/completions', fields: { id_slot: 0 } },
  { variant: 'lora (/v1/completions)', path: '/v1/completions', fields: { lora: [{ id: 0, scale: 1 }] } },
  { variant: 'response_fields (/v1/messages)', path: '/v1/messages', fields: { response_fields: ['content'] } },
  { variant: 'n_predict (/v1/chat/completions)', path: '/v1/chat/completions', fields: { n_predict: 100_000 } },
  { variant: 'top_logprobs: 100 (/v1/chat/completions)', path: '/v1/chat/completions', fields: { logprobs: true, top_logprobs: 100 } },
]

async function refusedField (ctx: AttackContext): Promise<AttackResult[]> {
  const { variant, path, fields } = pick(ctx.rand, REFUSED_FIELDS)
  const model = pick(ctx.rand, ctx.chatModels)
  const base = path === '/v1/completions' ? { model, prompt: 'Hi.' } : path === '/v1/messages' ? { model, max_tokens: 8, messages: [{ role: 'user', content: 'Hi.' }] } : { model, messages: [{ role: 'user', content: 'Hi.' }] }
  const { answer, ms, sentAgain } = await post(ctx, path, JSON.stringify({ ...base, max_tokens: 8, ...fields }))
  return [{ kind: 'refused_field', variant: `${variant}${sentAgain}`, answer, expected: answer === '400 unsupported_parameter', ms }]
}

/** The blobs the flood keeps at once: the folder's bound is this many (and one upload under way). */
export const BLOBS_KEPT = 3
const BLOB_BYTES = 3 * 2 ** 20

/**
 * Uploads of a few MB of random bytes under their right digests (201), now and then one sent again (200) and
 * one under a wrong digest (400, nothing kept), each past the last few deleted (200): the folder stays bounded.
 */
class BlobFlood {
  private readonly kept: string[] = []
  private rounds = 0
  constructor (private readonly ctx: AttackContext) {}

  async round (): Promise<AttackResult[]> {
    this.rounds++
    const bytes = randomBytes(BLOB_BYTES)
    const digest = `sha256:${createHash('sha256').update(bytes).digest('hex')}`
    const results = [await this.send('upload', `/api/blobs/${digest}`, 'POST', bytes, '201')]
    if (results[0]!.expected) this.kept.push(digest)
    if (this.rounds % 4 === 0) results.push(await this.send('the same upload again', `/api/blobs/${digest}`, 'POST', bytes, '200'))
    if (this.rounds % 5 === 0) {
      const wrong = `sha256:${createHash('sha256').update(randomBytes(32)).digest('hex')}`
      results.push(await this.send('an upload under a wrong digest', `/api/blobs/${wrong}`, 'POST', bytes, '400 digest_mismatch'))
    }
    while (this.kept.length > BLOBS_KEPT) results.push(await this.send('delete', `/api/blobs/${this.kept.shift()!}`, 'DELETE', undefined, '200'))
    return results
  }

  /** The attack over: what it kept goes too (the folder should then hold no blob). */
  async deleteKept (): Promise<AttackResult[]> {
    const results: AttackResult[] = []
    while (this.kept.length > 0) results.push(await this.send('delete', `/api/blobs/${this.kept.shift()!}`, 'DELETE', undefined, '200'))
    return results
  }

  private async send (variant: string, path: string, method: string, body: Buffer | undefined, expect: string): Promise<AttackResult> {
    const t0 = performance.now()
    const res = await http(`${this.ctx.base}${path}`, { method, headers: body ? { 'content-type': 'application/octet-stream' } : {}, body, signal: AbortSignal.timeout(60_000) })
    const text = await res.text()
    const answer = res.status < 300 ? String(res.status) : answerOf(res.status, text)
    return { kind: 'blob_flood', variant, answer, expected: answer === expect, ms: performance.now() - t0 }
  }
}

/** How long a round of idle connections is held at most: well past limits.header_timeout. */
const IDLE_HOLD_MS = 30_000

/**
 * Many connections from one address that send nothing, held until the gateway closes them or the round ends.
 * Two closings are expected: a 408 at limits.header_timeout, and, with keys on, a close with nothing sent when
 * more than limits.unauthenticated_connections are open (the oldest go to make room). Anything else is not.
 */
async function idleConnections (ctx: AttackContext): Promise<AttackResult[]> {
  const conns = Array.from({ length: ctx.idleConnections }, () => new RawConnection(ctx.port))
  const ports = await Promise.all(conns.map((c) => c.localPort))
  const t0 = Date.now()
  let timer: NodeJS.Timeout | undefined
  const holdMs = Math.max(0, Math.min(IDLE_HOLD_MS, ctx.deadline - t0))
  await Promise.race([Promise.all(conns.map((c) => c.closed)), new Promise<void>((resolve) => { timer = setTimeout(resolve, holdMs) })])
  clearTimeout(timer)
  const results = await Promise.all(conns.map(async (conn, i): Promise<AttackResult> => {
    const result = (answer: string, expected: boolean, ms: number): AttackResult => ({ kind: 'idle_connections', variant: 'connect, send nothing', answer, expected, ms })
    if (ports[i] === null) return result(`connect failed (${(await conn.closed).error})`, false, 0)
    if (!conn.isClosed) return result('held open until the attacker let go', true, Date.now() - t0)
    const end = await conn.closed
    const status = conn.status()
    if (status === 408) return result('408, closed by the gateway', true, end.afterMs)
    if (status === null) return result('closed with nothing sent (limits.unauthenticated_connections made room)', true, end.afterMs)
    return result(`closed by the gateway: ${status}${end.error ? ` (${end.error})` : ''}`, false, end.afterMs)
  }))
  for (const conn of conns) conn.destroy()
  return results
}
