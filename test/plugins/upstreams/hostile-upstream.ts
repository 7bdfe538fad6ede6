import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { Test } from 'tap'

/** What the hostile upstream does, named by the last user message of a chat (or a generate's prompt). */
export type Attack =
  | 'tool-index-1e7' | 'tool-index-1e8' | 'answer-200MiB' | 'answer-200MiB-declared' | 'endless-error'
  | 'line-48MB' | 'negative-counts' | 'huge-counts' | 'echo-key' | 'polite'

export interface HostileUpstream {
  origin: string
  /** Connections it accepted. */
  connections: number
  /** Per attack: the bytes it wrote of its answer, and whether the gateway closed the connection before it was done. */
  sent: Map<string, { bytes: number, cutOff: boolean }>
  /** Sets what its model list answers: its one model, or `count` of them (the list attack). */
  listModels(count: number): void
}

const MiB = 1 << 20
const sse = (data: unknown): string => `data: ${JSON.stringify(data)}\n\n`
const chunk = (delta: unknown, finish: string | null = null): unknown => ({ id: 'chatcmpl-x', object: 'chat.completion.chunk', model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] })

/**
 * A stand-in upstream (kind openai, and Ollama's /api/generate and /api/show for kind ollama) that misbehaves as the
 * request asks: a tool call numbered 10^7, an answer of 200 MiB, an error body without end, a 48 MB line, impossible
 * token counts, its own key echoed in every place an answer can carry it. It writes as fast as the gateway reads,
 * and stops when the gateway hangs up.
 */
export async function hostileUpstream (t: Test): Promise<HostileUpstream> {
  let models = 1
  const sent = new Map<string, { bytes: number, cutOff: boolean }>()
  const upstream: HostileUpstream = { origin: '', connections: 0, sent, listModels: (count) => { models = count } }
  const server = createServer((req, res) => {
    const parts: Buffer[] = []
    req.on('data', (part: Buffer) => parts.push(part))
    req.on('end', () => {
      const body = parts.length > 0 ? JSON.parse(Buffer.concat(parts).toString('utf8')) as Record<string, unknown> : {}
      void answer(req, res, body)
    })
  })
  server.on('connection', () => { upstream.connections++ })

  // Writes `total` bytes of `piece` repeated (after `head`), waiting whenever the gateway is backed up.
  const pour = async (res: ServerResponse, attack: string, head: string, piece: Buffer, total: number): Promise<void> => {
    const record = { bytes: 0, cutOff: false }
    sent.set(attack, record)
    res.on('close', () => { if (!res.writableFinished) record.cutOff = true })
    res.write(head)
    record.bytes += head.length
    // Each wait takes its listeners off again: an answer backs up thousands of times (the soak pours many).
    const backedUp = (): Promise<void> => new Promise((resolve) => {
      const done = (): void => { res.off('drain', done); res.off('close', done); resolve() }
      res.once('drain', done)
      res.once('close', done)
    })
    while (record.bytes < total && !res.destroyed) {
      if (!res.write(piece)) await backedUp()
      record.bytes += piece.length
    }
    if (!res.destroyed) res.end()
  }

  const answer = async (req: IncomingMessage, res: ServerResponse, body: Record<string, unknown>): Promise<void> => {
    const key = req.headers.authorization ?? ''
    const url = req.url ?? ''
    if (url === '/v1/models') {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ object: 'list', data: Array.from({ length: models }, (_, i) => ({ id: i === 0 ? 'm' : `m${i}`, object: 'model' })) }))
      return
    }
    if (url === '/api/tags') {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ models: [{ name: 'm', model: 'm' }] }))
      return
    }
    if (url === '/api/show') {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ template: `{{ .Prompt }} (asked with ${key})`, details: { format: 'gguf' }, capabilities: ['completion'] }))
      return
    }
    const messages = body.messages as Array<{ content: string }> | undefined
    const attack = (messages?.at(-1)?.content ?? String(body.prompt ?? '')) as Attack
    const stream = body.stream === true
    if (url === '/api/generate') {
      // Ollama's NDJSON lines, the key in one of them and in its last line's error.
      res.writeHead(200, { 'content-type': 'application/x-ndjson' })
      if (!stream) { res.end(JSON.stringify({ model: 'm', response: `you sent ${key}`, done: true, done_reason: 'stop', prompt_eval_count: 1, eval_count: 1 })); return }
      const line = `${JSON.stringify({ model: 'm', response: `you sent ${key}`, done: false })}\n`
      const cut = line.indexOf(key) + 12
      res.write(line.slice(0, cut))
      await new Promise((resolve) => setTimeout(resolve, 20))
      res.end(`${line.slice(cut)}${JSON.stringify({ model: 'm', response: '', done: true, done_reason: 'stop', prompt_eval_count: 1, eval_count: 1 })}\n`)
      return
    }
    switch (attack) {
      case 'tool-index-1e7':
      case 'tool-index-1e8': {
        // ~150 bytes that claim the 10^7th (10^8th) tool call.
        const call = { index: attack === 'tool-index-1e7' ? 1e7 : 1e8, id: 'c', type: 'function', function: { name: 'f', arguments: '{}' } }
        res.writeHead(200, { 'content-type': stream ? 'text/event-stream' : 'application/json' })
        if (!stream) { res.end(JSON.stringify({ choices: [{ index: 0, message: { role: 'assistant', content: null, tool_calls: [call] }, finish_reason: 'tool_calls' }], usage: { prompt_tokens: 3, completion_tokens: 2 } })); return }
        res.end(sse(chunk({ tool_calls: [call] })) + sse(chunk({}, 'tool_calls')) + sse({ choices: [], usage: { prompt_tokens: 3, completion_tokens: 2 } }) + 'data: [DONE]\n\n')
        return
      }
      case 'answer-200MiB':
      case 'answer-200MiB-declared':
        res.writeHead(200, { 'content-type': stream ? 'text/event-stream' : 'application/json', ...(attack === 'answer-200MiB-declared' ? { 'content-length': String(200 * MiB) } : {}) })
        if (stream) await pour(res, attack, '', Buffer.from(sse(chunk({ content: 'a'.repeat(64 << 10) }))), 200 * MiB)
        else await pour(res, attack, '{"choices":[{"index":0,"message":{"role":"assistant","content":"', Buffer.alloc(64 << 10, 0x61), 200 * MiB)
        return
      case 'endless-error':
        res.writeHead(500, { 'content-type': 'application/json' })
        await pour(res, attack, '{"error":{"message":"', Buffer.alloc(64 << 10, 0x62), Infinity)
        return
      case 'line-48MB':
        res.writeHead(200, { 'content-type': 'text/event-stream' })
        await pour(res, attack, 'data: {"choices":[{"index":0,"delta":{"content":"', Buffer.alloc(64 << 10, 0x61), 48e6)
        return
      case 'negative-counts':
      case 'huge-counts': {
        const usage = attack === 'negative-counts' ? { prompt_tokens: 3, completion_tokens: -2_000_000 } : { prompt_tokens: 1e15, completion_tokens: 2 }
        const timings = attack === 'negative-counts' ? { prompt_n: 3, predicted_n: -2_000_000 } : { prompt_n: 1e15, predicted_n: 2 }
        res.writeHead(200, { 'content-type': stream ? 'text/event-stream' : 'application/json' })
        if (!stream) { res.end(JSON.stringify({ choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }], usage, timings })); return }
        res.end(sse(chunk({ content: 'hi' })) + sse({ ...(chunk({}, 'stop') as object), timings }) + sse({ choices: [], usage }) + 'data: [DONE]\n\n')
        return
      }
      case 'echo-key': {
        res.writeHead(200, { 'content-type': stream ? 'text/event-stream' : 'application/json' })
        if (!stream) { res.end(JSON.stringify({ choices: [{ index: 0, message: { role: 'assistant', content: `you sent ${key}` }, finish_reason: 'stop' }], usage: { prompt_tokens: 1, completion_tokens: 1 } })); return }
        // The key cut in two across reads, then in an SSE error event.
        const text = sse(chunk({ content: `you sent ${key}` }))
        const cut = text.indexOf(key) + 12
        res.write(text.slice(0, cut))
        await new Promise((resolve) => setTimeout(resolve, 20))
        res.write(text.slice(cut))
        res.end(sse({ error: { message: `invalid key ${key}`, type: 'authentication_error' } }))
        return
      }
      default:
        res.writeHead(200, { 'content-type': stream ? 'text/event-stream' : 'application/json' })
        if (!stream) { res.end(JSON.stringify({ choices: [{ index: 0, message: { role: 'assistant', content: 'fine' }, finish_reason: 'stop' }], usage: { prompt_tokens: 1, completion_tokens: 1 } })); return }
        res.end(sse(chunk({ content: 'fine' })) + sse(chunk({}, 'stop')) + sse({ choices: [], usage: { prompt_tokens: 1, completion_tokens: 1 } }) + 'data: [DONE]\n\n')
    }
  }
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()) }))
  upstream.origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`
  return upstream
}
