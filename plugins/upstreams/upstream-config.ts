import { Type, type Static } from 'typebox'

/**
 * How much of an upstream's answers the gateway reads (config.yaml's `limits.upstream_*`): an upstream is another
 * party, and nothing it sends may cost this server more than these.
 */
export interface UpstreamLimits {
  /** Bytes of one answer, whole or streamed. */
  answerBytes: number
  /** Bytes of one error answer. */
  errorBytes: number
  /** The longest line, event or chunk of a stream that is held whole. */
  lineBytes: number
  /** Models in one model list. */
  models: number
}

/** One of config.yaml's `upstreams`: another server whose models are served here, reached with its own key. */
export interface UpstreamConfig {
  name: string
  /** `http(s)://host[:port][/path]`, without a trailing slash. */
  url: string
  /** What it speaks: another llamagate and Ollama list models at /api/tags; an OpenAI-compatible engine at /v1/models. */
  kind: 'llamagate' | 'openai' | 'ollama'
  /** Its own API key, sent as `Authorization: Bearer`; never shown to clients. null: none. */
  key: string | null
  /** Only these of its models; empty: every model it lists. */
  models: string[]
  /** Put before its model names here: a model `m` is served as `prefix + m`. @default '' */
  prefix: string
  /** The most requests sent to it at once. @default 16 */
  maxConcurrent: number
  /**
   * How Anthropic Messages requests (`/v1/messages`, its count_tokens) reach it: `native` as they are; `convert`
   * to chat completions and back, for an engine with no Messages API (SGLang, some vLLM builds, older Ollama);
   * `auto` as they are until it answers 404 or 405, then converted. Unset where the config left it so.
   * @default 'auto'
   */
  messages?: 'auto' | 'native' | 'convert'
  /** What is read of its answers: `limits.upstream_*`, the same for every upstream. */
  limits: UpstreamLimits
  /** A plugin's backend (core/platform/backends.ts), not a server: messages call it one. @default false */
  plugin?: boolean
}

/** One entry of config.yaml's `upstreams`. */
export const UpstreamEntry = Type.Object({
  // Shapes beyond the types (name, URL) are checked by upstreamConfigs, whose messages say what is wrong.
  name: Type.String({ description: 'how logs, metrics and errors name this upstream: 1-64 of A-Z a-z 0-9 . _ -' }),
  url: Type.String({ description: 'http(s)://host[:port][/path], no query' }),
  kind: Type.Union([Type.Literal('llamagate'), Type.Literal('openai'), Type.Literal('ollama')]),
  key: Type.Optional(Type.Union([Type.String(), Type.Null()], { description: 'the upstream\'s own API key, sent as a Bearer token; clients never see it' })),
  models: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { description: 'only these of its models; empty or unset: every model it lists' })),
  prefix: Type.Optional(Type.String({ pattern: '^\\S{0,100}$', description: 'put before its model names here (e.g. "box/")' })),
  max_concurrent: Type.Optional(Type.Integer({ minimum: 1, description: 'the most requests sent to it at once' })),
  messages: Type.Optional(Type.Union([Type.Literal('auto'), Type.Literal('native'), Type.Literal('convert')], {
    description: 'Anthropic Messages requests: sent as they are (native), converted to chat completions (convert), or as they are until it answers 404/405 (auto, the default)',
  })),
}, { additionalProperties: false })

/** One entry of config.yaml's `upstreams` as written (after the schema check). */
export type RawUpstream = Static<typeof UpstreamEntry>

const UPSTREAM_NAME = /^[A-Za-z0-9._-]{1,64}$/
// A key goes out in a header line: printable ASCII, no spaces.
const UPSTREAM_KEY = /^[\x21-\x7e]+$/

/**
 * `upstreams`: names unique and plain, URLs http(s) with no query, fragment or credentials (the key has its own
 * field). Messages never quote a key: config errors are printed and logged.
 */
export function upstreamConfigs (raw: readonly RawUpstream[], limits: UpstreamLimits, problems: string[]): UpstreamConfig[] {
  const seen = new Set<string>()
  return raw.flatMap((u, at) => {
    const key = `upstreams[${at}] (${u.name})`
    const count = problems.length
    if (!UPSTREAM_NAME.test(u.name)) problems.push(`upstreams[${at}].name = ${JSON.stringify(u.name)} is not allowed: must be 1-64 of A-Z a-z 0-9 . _ -`)
    else if (seen.has(u.name)) problems.push(`${key}: the name is used twice; each upstream needs its own`)
    seen.add(u.name)
    const url = upstreamUrl(u.url)
    if (typeof url !== 'string') problems.push(`${key}: ${url.problem}`)
    const secret = u.key ?? null
    if (secret !== null && !UPSTREAM_KEY.test(secret)) problems.push(`${key}: key must be printable ASCII without spaces (or null for none)`)
    if (problems.length > count || typeof url !== 'string') return []
    return [{
      name: u.name, url, kind: u.kind, key: secret, models: u.models ?? [], prefix: u.prefix ?? '', maxConcurrent: u.max_concurrent ?? 16,
      ...(u.messages !== undefined ? { messages: u.messages } : {}), limits,
    }]
  })
}

/** The URL without trailing slashes, or what is wrong with it (a URL with a password in it is not quoted). */
export function upstreamUrl (text: string): string | { problem: string } {
  const shown = `url ${JSON.stringify(text)} is not allowed`
  let url: URL
  try {
    url = new URL(text)
  } catch {
    return { problem: `${shown}: must be a URL such as http://10.0.0.5:8080 or https://api.example.com/v1-proxy` }
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return { problem: `${shown}: must start with http:// or https://` }
  if (url.username !== '' || url.password !== '') return { problem: 'url is not allowed: it must carry no user or password; put the upstream\'s key in key' }
  if (url.search !== '' || url.hash !== '' || /[?#]/.test(text)) return { problem: `${shown}: must have no query (?) or fragment (#)` }
  return (url.origin + url.pathname).replace(/\/+$/, '')
}
