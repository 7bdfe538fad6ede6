import { http } from './soak-probes.js'

// The soak's clients: one request of a given shape, sent and read to its end, and what came of it. Every
// request has its own deadline, so that one the gateway never ends is counted as hung instead of waiting.

export type Surface = 'api/chat' | 'api/generate' | 'v1/chat/completions'

/**
 * What came of a request:
 * - finished: a whole answer (200 with the answer's fields), or a stream that reached its last event;
 * - error_event: a stream that ended with an error event (after the 200);
 * - http_error: a 4xx/5xx answer with an error body;
 * - client_aborted: the client left on purpose (mid-stream, or before the answer came);
 * - refused: a 403, the API key may not do that (a model outside its list);
 * - limited: a 429 with a Retry-After header, the API key is past one of its limits;
 * - cut: a stream that ended with neither its last event nor an error event (a silent cut);
 * - transport_error: the connection failed before or while the answer came;
 * - hung: nothing ended it before its deadline.
 * The first four are accounted for; refused and limited only for a request that expects them (`expect`); the last
 * three are the gateway's fault.
 */
export const OUTCOMES = ['finished', 'error_event', 'http_error', 'client_aborted', 'refused', 'limited', 'cut', 'transport_error', 'hung'] as const
export type Outcome = (typeof OUTCOMES)[number]
export const ACCOUNTED: ReadonlySet<Outcome> = new Set(['finished', 'error_event', 'http_error', 'client_aborted'])

/** Whether a request's outcome is one it may end with: those it expects, or else the usual four. */
export function accounted (spec: RequestSpec, outcome: Outcome): boolean {
  return spec.expect !== undefined ? spec.expect.includes(outcome) : ACCOUNTED.has(outcome)
}

export interface RequestSpec {
  surface: Surface
  stream: boolean
  model: string
  maxTokens: number
  /** Leave on purpose: after this many events of the stream, or this many ms after sending. */
  leave?: { afterEvents?: number, afterMs?: number }
  /** Called with each parsed event (a streamed answer's), e.g. to act once the answer has started. */
  onEvent?: (index: number) => void
  /** The API key it shows, in place of the soak's own (soak-probes.ts, useApiKey). */
  key?: { name: string, secret: string }
  /** The only outcomes that account for it (default: ACCOUNTED): a keyed request that must stay whole, or be refused. */
  expect?: readonly Outcome[]
}

/** Tokens an answer said it read (its whole prompt) and generated. */
export interface AnswerTokens { prompt: number, generated: number }

export interface RequestResult {
  outcome: Outcome
  status: number | null
  /** The error's words (normalized) for http_error, error_event, cut, transport_error and hung. */
  reason: string | null
  events: number
  ms: number
  /** What a finished answer said it used (native: prompt_eval_count and eval_count; OpenAI: usage); null if it did not. */
  tokens: AnswerTokens | null
  /** A 429's Retry-After, in seconds. */
  retryAfterS: number | null
}

const PROMPT = 'Tell me a long story about a lighthouse keeper and the sea.'

function requestBody (spec: RequestSpec, seed: number): { path: string, body: unknown, headers: Record<string, string> } {
  const options = { max_tokens: spec.maxTokens, ignore_eos: true, seed }
  switch (spec.surface) {
    case 'api/chat':
      // NDJSON, as the Ollama clients ask for it.
      return { path: '/api/chat', headers: { accept: 'application/x-ndjson' }, body: { model: spec.model, stream: spec.stream, messages: [{ role: 'user', content: PROMPT }], options } }
    case 'api/generate':
      // SSE, the gateway's default stream format.
      return { path: '/api/generate', headers: {}, body: { model: spec.model, stream: spec.stream, prompt: PROMPT, options } }
    case 'v1/chat/completions':
      return {
        path: '/v1/chat/completions',
        headers: {},
        body: { model: spec.model, stream: spec.stream, max_tokens: spec.maxTokens, ignore_eos: true, seed, messages: [{ role: 'user', content: PROMPT }], ...(spec.stream ? { stream_options: { include_usage: true } } : {}) },
      }
  }
}

/**
 * The words of an error, with what varies from one occurrence to the next folded (llama-server's log lines
 * that a runtime's death carries, paths, numbers), so that like errors are counted together. Model names stay.
 */
export function normalizeReason (text: string): string {
  return text
    .replace(/\d+\.\d+\.\d+\.\d+ [DIWE] [\s\S]*/, '<llama-server log lines>')
    .replace(/(^|[\s"'(=:])\/[^\s"',)]+/g, '$1<path>')
    .replace(/\b[0-9a-f]{64}\b/g, '<sha256>')
    .replace(/(?<![\w-])\d+(\.\d+)?\b/g, 'N')
    .replace(/\s+/g, ' ')
    .slice(0, 160)
}

function errorText (body: unknown): string | null {
  if (body === null || typeof body !== 'object') return null
  const error = (body as { error?: unknown }).error
  if (error === undefined) return null
  if (typeof error === 'string') return error
  if (error !== null && typeof error === 'object' && typeof (error as { message?: unknown }).message === 'string') return (error as { message: string }).message
  return JSON.stringify(error)
}

/** The token counts an answer (or a stream's event) carries: native prompt_eval_count/eval_count, or OpenAI's usage. */
function answerTokens (body: Record<string, unknown>): AnswerTokens | null {
  const whole = (n: unknown): n is number => typeof n === 'number' && Number.isInteger(n) && n >= 0
  if (whole(body.prompt_eval_count) && whole(body.eval_count)) return { prompt: body.prompt_eval_count, generated: body.eval_count }
  const usage = body.usage as { prompt_tokens?: unknown, completion_tokens?: unknown } | undefined | null
  if (usage != null && whole(usage.prompt_tokens) && whole(usage.completion_tokens)) return { prompt: usage.prompt_tokens, generated: usage.completion_tokens }
  return null
}

/** Whether a whole (unstreamed) answer has what its surface promises. */
function wholeAnswer (surface: Surface, body: Record<string, unknown>): boolean {
  switch (surface) {
    case 'api/chat': return body.done === true && typeof (body.message as { content?: unknown } | undefined)?.content === 'string'
    case 'api/generate': return body.done === true && typeof body.response === 'string'
    case 'v1/chat/completions': return Array.isArray(body.choices) && typeof (body.choices[0] as { message?: { content?: unknown } } | undefined)?.message?.content === 'string'
  }
}

/**
 * Sends one request and reads it to its end (or leaves, as `spec.leave` says). Never throws: every way it can
 * end is an outcome. `timeoutMs` is the deadline past which the request counts as hung.
 */
export async function runRequest (base: string, spec: RequestSpec, seed: number, timeoutMs: number): Promise<RequestResult> {
  const started = performance.now()
  const controller = new AbortController()
  let why: 'hung' | 'leave' | null = null
  const abort = (reason: 'hung' | 'leave'): void => {
    if (why !== null) return
    why = reason
    controller.abort(new Error(reason))
  }
  const hungTimer = setTimeout(() => abort('hung'), timeoutMs)
  const leaveTimer = spec.leave?.afterMs !== undefined ? setTimeout(() => abort('leave'), spec.leave.afterMs) : null
  let status: number | null = null
  let events = 0
  let doneSeen = false
  let tokens: AnswerTokens | null = null
  let retryAfterS: number | null = null
  // An error answer's reason starts with its status, kept as it is.
  const result = (outcome: Outcome, reason: string | null = null): RequestResult =>
    ({ outcome, status, reason: reason === null ? null : `${outcome === 'http_error' ? `${status} ` : ''}${normalizeReason(reason)}`, events, ms: performance.now() - started, tokens, retryAfterS })
  try {
    const { path, body, headers } = requestBody(spec, seed)
    const auth = spec.key !== undefined ? { authorization: `Bearer ${spec.key.secret}` } : {}
    const res = await http(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers, ...auth }, body: JSON.stringify(body), signal: controller.signal })
    status = res.status
    if (status !== 200) {
      const text = await res.text()
      let parsed: unknown = null
      try { parsed = JSON.parse(text) } catch { /* not JSON */ }
      const words = errorText(parsed)
      // A 4xx/5xx without an error body in the surface's shape is not a proper answer.
      if (words === null) return result('cut', `status ${status} without an error body: ${text.slice(0, 100)}`)
      if (status === 403) return result('refused', words)
      // A 429 says when to come back; one that does not is an error like any other.
      const retryAfter = res.headers.get('retry-after')
      if (status === 429 && retryAfter !== null && /^\d+$/.test(retryAfter)) {
        retryAfterS = Number(retryAfter)
        return result('limited', words)
      }
      return result('http_error', words)
    }
    if (!spec.stream) {
      const text = await res.text()
      let parsed: Record<string, unknown>
      try { parsed = JSON.parse(text) as Record<string, unknown> } catch { return result('cut', `a 200 whose body is not JSON (${text.length} bytes)`) }
      const words = errorText(parsed)
      if (words !== null) return result('error_event', words)
      tokens = answerTokens(parsed)
      return wholeAnswer(spec.surface, parsed) ? result('finished') : result('cut', `a 200 without the answer's fields: ${text.slice(0, 100)}`)
    }
    const sse = spec.surface !== 'api/chat'
    let buffer = ''
    let error: string | null = null
    const decoder = new TextDecoder()
    const onLine = (line: string): void => {
      let data = line
      if (sse) {
        if (!line.startsWith('data: ')) return // `event: ...` names and blank separators
        data = line.slice(6)
        if (data === '[DONE]') { doneSeen = true; return }
      }
      if (data.trim() === '') return
      let event: Record<string, unknown>
      try { event = JSON.parse(data) as Record<string, unknown> } catch { error ??= `an event that is not JSON: ${data.slice(0, 80)}`; return }
      events++
      const words = errorText(event)
      if (words !== null) { error ??= words; return }
      if (spec.surface !== 'v1/chat/completions' && event.done === true) doneSeen = true
      // The native last event, or OpenAI's usage event (asked for with stream_options.include_usage).
      tokens = answerTokens(event) ?? tokens
      spec.onEvent?.(events)
      if (spec.leave?.afterEvents !== undefined && events >= spec.leave.afterEvents) abort('leave')
    }
    for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(chunk, { stream: true })
      let at: number
      while ((at = buffer.indexOf('\n')) !== -1) {
        onLine(buffer.slice(0, at))
        buffer = buffer.slice(at + 1)
      }
      if (why === 'leave') break
    }
    if (why === 'leave') return result('client_aborted')
    if (buffer !== '') onLine(buffer)
    if (error !== null) return result('error_event', error)
    return doneSeen ? result('finished') : result('cut', `the stream ended after ${events} events without its last one`)
  } catch (err) {
    if (why === 'leave') return result('client_aborted')
    if (why === 'hung') return result('hung', `no end within ${Math.round(timeoutMs / 1000)} s (status ${status ?? 'none'}, ${events} events${doneSeen ? ', last event seen' : ''})`)
    const cause = (err as { cause?: { code?: string, message?: string } }).cause
    return result('transport_error', `${(err as Error).message}${cause ? `: ${cause.code ?? ''} ${cause.message ?? ''}` : ''}`)
  } finally {
    clearTimeout(hungTimer)
    if (leaveTimer !== null) clearTimeout(leaveTimer)
  }
}

/** The lines of a streamed body (SSE or NDJSON) as they arrive; the last one without its newline too. */
export async function * lines (body: AsyncIterable<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder()
  let buffer = ''
  for await (const chunk of body) {
    buffer += decoder.decode(chunk, { stream: true })
    let at: number
    while ((at = buffer.indexOf('\n')) !== -1) {
      yield buffer.slice(0, at)
      buffer = buffer.slice(at + 1)
    }
  }
  if (buffer !== '') yield buffer
}

/** A small seeded generator (mulberry32): the same --seed, the same mix of requests and faults. */
export function random (seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** One request of the mix the clients send: shapes, models and leavers. */
export function pickRequest (rand: () => number, models: readonly string[]): RequestSpec {
  const model = models[Math.floor(rand() * models.length)]!
  const maxTokens = 8 + Math.floor(rand() * 56)
  const roll = rand()
  if (roll < 0.22) return { surface: 'api/chat', stream: true, model, maxTokens }
  if (roll < 0.34) return { surface: 'api/chat', stream: false, model, maxTokens }
  if (roll < 0.44) return { surface: 'api/generate', stream: true, model, maxTokens }
  if (roll < 0.50) return { surface: 'api/generate', stream: false, model, maxTokens }
  if (roll < 0.68) return { surface: 'v1/chat/completions', stream: true, model, maxTokens }
  if (roll < 0.80) return { surface: 'v1/chat/completions', stream: false, model, maxTokens }
  // Leavers (20%): mostly mid-stream, after the first few events of a long answer; some at a random moment
  // soon after sending (while the model loads, while queued, or before a whole answer comes).
  const surface: Surface = rand() < 0.5 ? 'api/chat' : 'v1/chat/completions'
  if (rand() < 0.7) return { surface, stream: true, model, maxTokens: 400, leave: { afterEvents: 1 + Math.floor(rand() * 4) } }
  return { surface, stream: rand() < 0.5, model, maxTokens: 400, leave: { afterMs: Math.floor(rand() * 60) } }
}
