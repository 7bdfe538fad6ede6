import { randomUUID } from 'node:crypto'
import type { UpstreamConfig } from '../upstream-config.js'
import { duration, tokenCount } from '../../../runtimes/index.js'
import { endedEarly, timingsOf, type Detour, type Timings, type UpstreamCalls } from './detour.js'

// llama-server's native /completion (a raw prompt, no chat template: /api/generate with `raw`) is llama-server's alone.
// An OpenAI-compatible engine and another llamagate take the same raw prompt at /v1/completions; Ollama's /v1/completions
// puts it through the model's template, so Ollama is asked at its own /api/generate with `raw: true`.

type Body = Record<string, unknown>

/** Ollama's sampling options that llama-server reads under the same names (Ollama's api.Options). */
const OLLAMA_OPTIONS = new Set([
  'temperature', 'top_k', 'top_p', 'min_p', 'typical_p', 'repeat_last_n', 'repeat_penalty', 'presence_penalty',
  'frequency_penalty', 'seed', 'mirostat', 'mirostat_tau', 'mirostat_eta',
  // Not Ollama's (it logs and ignores it); a llamagate speaking Ollama's API honours it.
  'ignore_eos',
])

/** llama-server's /completion answer, whole or its last event: why it stopped, and its token counts. */
function completionEnd (content: string, finishReason: unknown, timings: Timings | null): Body {
  return {
    content, stop: true,
    // An OpenAI answer says `stop` both for the end of sequence and for a stop string: only a limit is told apart.
    stop_type: finishReason === 'length' ? 'limit' : 'eos',
    ...(timings !== null ? { timings, tokens_predicted: timings.predicted_n, tokens_evaluated: timings.prompt_n + (timings.cache_n ?? 0) } : {}),
  }
}

/**
 * `/completion` at an OpenAI text completion's `/v1/completions`: `n_predict` is `max_tokens`; a JSON schema stays
 * `json_schema` (llama-server reads it there on every completion endpoint, so a llamagate passes it on) and, for an
 * OpenAI-compatible engine, also goes as `response_format` (vLLM's structured output). A stream asks for its usage,
 * which engines other than llama-server only say when asked.
 */
export function completionViaText (calls: UpstreamCalls, body: Body, signal: AbortSignal, kind: UpstreamConfig['kind']): Detour {
  const { n_predict: limit, json_schema: schema, ...rest } = body
  const sent: Body = {
    ...rest,
    ...(limit !== undefined ? { max_tokens: limit } : {}),
    ...(schema !== undefined ? { json_schema: schema } : {}),
    ...(schema !== undefined && kind === 'openai' ? { response_format: { type: 'json_schema', json_schema: { name: 'response', schema } } } : {}),
  }
  return {
    whole: async () => {
      const answer = await calls.json('/v1/completions', { ...sent, stream: false }, signal) as { choices?: Array<{ text?: string, finish_reason?: string }> }
      const choice = answer.choices?.[0]
      return completionEnd(choice?.text ?? '', choice?.finish_reason, timingsOf(answer))
    },
    events: async () => textEvents(await calls.events('/v1/completions', { ...sent, stream: true, stream_options: { include_usage: true } }, signal)),
  }
}

async function * textEvents (events: AsyncGenerator<unknown>): AsyncGenerator<unknown> {
  let finishReason: string | null = null
  let timings: Timings | null = null
  for await (const event of events as AsyncGenerator<{ error?: unknown, choices?: Array<{ text?: string, finish_reason?: string | null }> }>) {
    if (event.error !== undefined) { yield { error: event.error }; return }
    const choice = event.choices?.[0]
    if (choice?.text) yield { content: choice.text, stop: false }
    finishReason = choice?.finish_reason ?? finishReason
    // The finish chunk (llama-server's timings) or the usage chunk after it (include_usage): the last one says.
    timings = timingsOf(event) ?? timings
  }
  if (finishReason === null) throw endedEarly()
  yield completionEnd('', finishReason, timings)
}

/** An answer of Ollama's /api/generate, whole or one line of its stream. */
interface GenerateAnswer {
  model?: string
  response?: string
  done?: boolean
  done_reason?: string
  prompt_eval_count?: number
  prompt_eval_duration?: number
  eval_count?: number
  eval_duration?: number
  error?: unknown
}

/** Ollama's body for a raw prompt: its own options by name, a JSON schema as `format`, never streamed unless asked. */
function generateBody (body: Body): Body {
  const options: Body = {}
  const sent: Body = { raw: true, stream: body.stream === true }
  for (const [key, value] of Object.entries(body)) {
    if (value === undefined) continue
    if (key === 'model' || key === 'prompt' || key === 'suffix') sent[key] = value
    else if (key === 'json_schema') sent.format = value
    else if (key === 'n_predict' || key === 'max_tokens' || key === 'max_completion_tokens') options.num_predict = value
    else if (key === 'n_keep') options.num_keep = value
    // Ollama takes its stop strings only as a list.
    else if (key === 'stop') options.stop = typeof value === 'string' ? [value] : value
    else if (OLLAMA_OPTIONS.has(key)) options[key] = value
  }
  return { ...sent, options }
}

function generateTimings (answer: GenerateAnswer): Timings {
  const { prompt, generated } = generateCounts(answer)
  return { prompt_n: prompt, prompt_ms: duration(answer.prompt_eval_duration) / 1e6, predicted_n: generated, predicted_ms: duration(answer.eval_duration) / 1e6 }
}

/** Ollama's token counts of an answer, 0 where it gives none. @throws an error of the answer for a count that cannot be */
function generateCounts (answer: GenerateAnswer): { prompt: number, generated: number } {
  return { prompt: tokenCount(answer.prompt_eval_count, 'prompt_eval_count') ?? 0, generated: tokenCount(answer.eval_count, 'eval_count') ?? 0 }
}

/** `/completion` at Ollama's `/api/generate` with `raw: true`. */
export function completionViaGenerate (calls: UpstreamCalls, body: Body, signal: AbortSignal): Detour {
  const sent = generateBody(body)
  return {
    whole: async () => {
      const answer = await calls.json('/api/generate', { ...sent, stream: false }, signal) as GenerateAnswer
      return completionEnd(answer.response ?? '', answer.done_reason, generateTimings(answer))
    },
    events: async () => generateEvents(await calls.events('/api/generate', { ...sent, stream: true }, signal)),
  }
}

async function * generateEvents (lines: AsyncGenerator<unknown>): AsyncGenerator<unknown> {
  for await (const line of lines as AsyncGenerator<GenerateAnswer>) {
    if (line.error !== undefined) { yield { error: line.error }; return }
    if (line.response) yield { content: line.response, stop: false }
    if (line.done === true) { yield completionEnd('', line.done_reason, generateTimings(line)); return }
  }
  throw endedEarly()
}

/**
 * Whether a `/v1/completions` request can be asked of Ollama's `/api/generate` as a raw prompt: one text, and
 * nothing that only an OpenAI text completion gives (`echo`, `logprobs`, several choices).
 */
export function isPlainCompletion (body: Body): boolean {
  return typeof body.prompt === 'string' && body.echo === undefined && body.logprobs === undefined && (body.n === undefined || body.n === 1)
}

/**
 * OpenAI's `/v1/completions` at Ollama's `/api/generate` with `raw: true` (Ollama's own /v1/completions would put the
 * prompt through the model's template), answered in OpenAI's shapes: a `text_completion` with its usage, or its
 * chunks, the last with `finish_reason` and `usage`, then `[DONE]`.
 */
export function textCompletionViaGenerate (calls: UpstreamCalls, body: Body, signal: AbortSignal): Detour {
  const sent = generateBody(body)
  const id = `cmpl-${randomUUID().replaceAll('-', '')}`
  const created = Math.floor(Date.now() / 1000)
  const chunk = (answer: GenerateAnswer, text: string, finishReason: string | null): Body => ({
    // The name the client asked for (Ollama answers with its own).
    id, object: 'text_completion', created, model: body.model,
    choices: [{ text, index: 0, logprobs: null, finish_reason: finishReason }],
    ...(finishReason !== null ? { usage: usageOf(answer) } : {}),
  })
  const chunks = async function * (lines: AsyncGenerator<unknown>): AsyncGenerator<Body> {
    for await (const line of lines as AsyncGenerator<GenerateAnswer>) {
      if (line.error !== undefined) { yield { error: line.error }; return }
      if (line.done === true) { yield chunk(line, line.response ?? '', finishReasonOf(line)); return }
      if (line.response) yield chunk(line, line.response, null)
    }
    throw endedEarly()
  }
  const events = async (): Promise<AsyncGenerator<Body>> => chunks(await calls.events('/api/generate', { ...sent, stream: true }, signal))
  return {
    whole: async () => {
      const answer = await calls.json('/api/generate', { ...sent, stream: false }, signal) as GenerateAnswer
      return chunk(answer, answer.response ?? '', finishReasonOf(answer))
    },
    events,
    sse: async () => sseText(await events()),
  }
}

function finishReasonOf (answer: GenerateAnswer): string {
  return answer.done_reason === 'length' ? 'length' : 'stop'
}

function usageOf (answer: GenerateAnswer): Body {
  const { prompt, generated } = generateCounts(answer)
  return { prompt_tokens: prompt, completion_tokens: generated, total_tokens: prompt + generated }
}

/** OpenAI's SSE framing: each chunk a `data:` event, then `[DONE]`; an error event ends it as llama-server's would. */
async function * sseText (chunks: AsyncGenerator<Body>): AsyncGenerator<string> {
  for await (const chunk of chunks) {
    if (chunk.error !== undefined) throw new Error(`the upstream failed: ${typeof chunk.error === 'string' ? chunk.error : JSON.stringify(chunk.error)}`)
    yield `data: ${JSON.stringify(chunk)}\n\n`
  }
  yield 'data: [DONE]\n\n'
}
