import { undici } from '../../core/base/lazy-require.js'
import type { UpstreamConfig } from '../../plugins/upstreams/upstream-config.js'
import { formatBytes } from '../../core/base/units.js'
import { readAtMost } from '../../runtimes/index.js'
import { Redaction, withoutSecrets } from './redaction.js'

/** How much of an upstream's error answer a message quotes. */
const DETAIL_CHARS = 200
// The bytes a model list may take per model it may list (limits.upstream_models): a tags entry is ~350, an id ~80.
// Parsing is what a long list costs (9.4 MB of short entries: ~0.3 s of the loop), so it is refused unread.
const LIST_BYTES_PER_MODEL = 1024

/**
 * The models an upstream serves, by its own names: another llamagate and Ollama list them at `/api/tags`
 * (`models[].name`), an OpenAI-compatible engine at `/v1/models` (`data[].id`). Only those of `u.models` when it
 * names any (one the upstream does not list is left out). A list of more than `limits.upstream_models` models, or
 * of more bytes than 1 KiB for each, is refused.
 * @throws an Error naming the upstream and its status (never its key) on a refusal, an unreadable answer, or no answer
 */
export async function listUpstreamModels (u: UpstreamConfig, signal: AbortSignal): Promise<string[]> {
  const path = u.kind === 'openai' ? '/v1/models' : '/api/tags'
  const what = `upstream "${u.name}" (GET ${u.url}${path})`
  const { models } = u.limits
  const { status, text } = await ask(u, what, path, null, signal, Math.min(u.limits.answerBytes, models * LIST_BYTES_PER_MODEL), 'for its model list (1 KiB for each of limits.upstream_models)')
  const names = modelNames(u.kind, text)
  if (names === null) throw secretless(u, new Error(`${what} answered ${status} with something that is not a model list`))
  if (names.length > models) throw new Error(`${what} lists ${names.length} models, more than limits.upstream_models (${models})`)
  const unique = [...new Set(names)]
  if (u.models.length === 0) return unique
  const wanted = new Set(u.models)
  return unique.filter((name) => wanted.has(name))
}

/** The names in a model list, or null when it is not one. */
function modelNames (kind: UpstreamConfig['kind'], text: string): string[] | null {
  let list: unknown
  try {
    const body = JSON.parse(text) as Record<string, unknown> | null
    list = kind === 'openai' ? body?.data : body?.models
  } catch {
    return null
  }
  if (!Array.isArray(list)) return null
  const field = kind === 'openai' ? 'id' : 'name'
  const names = list.map((entry) => (entry as Record<string, unknown> | null)?.[field])
  return names.every((name) => typeof name === 'string' && name !== '') ? names as string[] : null
}

/** `: <the upstream's own message>` from an error answer, shortened; '' when it gave none. */
function detail (text: string): string {
  let message: unknown = text
  try {
    const { error } = JSON.parse(text) as { error?: string | { message?: string } }
    message = typeof error === 'string' ? error : error?.message
  } catch {
    // Not JSON: the text itself, unless it is a page (a proxy's HTML).
  }
  if (typeof message !== 'string' || message.trimStart().startsWith('<')) return ''
  const line = message.replace(/\s+/g, ' ').trim()
  return line === '' ? '' : `: ${line.length > DETAIL_CHARS ? `${line.slice(0, DETAIL_CHARS)}…` : line}`
}

/**
 * A GET (`body` null) or a JSON POST to the upstream with its key: its 2xx answer's text, its key cut out. An answer
 * over `maxBytes` (`why` says which limit that is), or an error answer over limits.upstream_error_size, is not read
 * further and its connection is dropped. @throws as the callers say
 */
async function ask (u: UpstreamConfig, what: string, path: string, body: unknown, signal: AbortSignal, maxBytes = u.limits.answerBytes, why = '(limits.upstream_answer_size)'): Promise<{ status: number, text: string }> {
  const key: Record<string, string> = u.key !== null ? { authorization: `Bearer ${u.key}` } : {}
  let status: number
  let text: string
  try {
    const response = await undici().request(`${u.url}${path}`, body === null
      ? { method: 'GET', signal, headers: key }
      : { method: 'POST', signal, body: JSON.stringify(body), headers: { 'content-type': 'application/json', ...key } })
    status = response.statusCode
    const ok = status >= 200 && status < 300
    const limit = ok ? maxBytes : u.limits.errorBytes
    const tooLarge = (): Error => new TooLarge(`${what} answered ${status} with more than ${formatBytes(limit)} ${ok ? why : '(limits.upstream_error_size)'}`)
    text = (await readAtMost(response.body, limit, tooLarge, response.headers['content-length'])).toString('utf8')
  } catch (err) {
    if (signal.aborted) throw signal.reason
    if (err instanceof TooLarge) throw err
    throw secretless(u, new Error(`${what} cannot be reached: ${(err as Error).message}`, { cause: err }))
  }
  text = Redaction.of(u.key === null ? [] : [u.key])?.text(text) ?? text
  if (status < 200 || status >= 300) throw secretless(u, new Error(`${what} answered ${status}${detail(text)}`))
  return { status, text }
}

/** An answer past its limit: said as it is (it quotes nothing of the answer). */
class TooLarge extends Error {}

function secretless (u: UpstreamConfig, err: Error): Error {
  return u.key === null ? err : withoutSecrets(err, [u.key]) as Error
}

/**
 * What an upstream says of one of its models at `/api/show` (another llamagate and Ollama have it: details,
 * model_info, template, parameters, capabilities; `verbose` keeps model_info's long arrays), or null for an
 * OpenAI-compatible engine, which says nothing of a model beyond its name.
 * @throws an Error naming the upstream and its status (never its key) on a refusal, an unreadable answer, or no answer
 */
export async function showUpstreamModel (u: UpstreamConfig, remoteModel: string, verbose: boolean, signal: AbortSignal): Promise<Record<string, unknown> | null> {
  if (u.kind === 'openai') return null
  const what = `upstream "${u.name}" (POST ${u.url}/api/show)`
  const { status, text } = await ask(u, what, '/api/show', { model: remoteModel, ...(verbose ? { verbose } : {}) }, signal)
  try {
    const shown = JSON.parse(text) as unknown
    if (typeof shown === 'object' && shown !== null && !Array.isArray(shown)) return shown as Record<string, unknown>
  } catch {
    // Said below.
  }
  throw secretless(u, new Error(`${what} answered ${status} with something that is not a model's description`))
}
