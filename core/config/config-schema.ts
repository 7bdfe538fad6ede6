import { Type, type Static } from 'typebox'
import { OptionsSchema } from './options-schema.js'
import { BUILTIN_RUNTIMES, type BuiltinRuntime } from './runtime-kinds.js'

/** A duration: seconds as a number, or a string such as "5m" (core/base/units.ts reads it). */
export const Duration = Type.Union([Type.Number(), Type.String()], {
  description: 'a duration: seconds as a number, or a string such as "5m", "90s", "1h30m"',
})
/** A size: bytes as an integer, or a string such as "16MiB". */
export const Size = Type.Union([Type.Integer({ minimum: 1 }), Type.String()], {
  description: 'a size: bytes as an integer, or a string such as "16MiB"',
})
// An address and port to listen on: `127.0.0.1:9464`, `[::1]:9464`, `0.0.0.0:11434`.
export const LISTEN_PATTERN = '^(\\[[0-9A-Fa-f:.]+\\]|[^\\s:\\[\\]]+):[0-9]{1,5}$'
const RuntimeBuild = Type.Object({ bin: Type.String({ minLength: 1 }) }, { additionalProperties: false })

/**
 * `runtime` and `runtimes`, for the built-in kinds and those the listed plugins add (core/config/runtime-kinds.ts): closed
 * lists, so that a misspelt kind is heard of at start rather than found missing at the first load.
 */
export function runtimeKeys (kinds: readonly string[]) {
  const names = [...BUILTIN_RUNTIMES, ...kinds]
  return {
    runtime: Type.Union([Type.Literal('auto'), ...names.map((n) => Type.Literal(n))], { default: 'auto' }),
    runtimes: Type.Object(Object.fromEntries(names.map((n) => [n, Type.Optional(RuntimeBuild)])), { additionalProperties: false, default: {} }),
  }
}
const BUILTIN_RUNTIME_KEYS = runtimeKeys([])

/** The core's keys of each `models.<name>`: the options over the defaults, and the other names it answers to. */
export const MODEL_KEYS = {
  options: Type.Optional(Type.Object(OptionsSchema.properties, { additionalProperties: false })),
  aliases: Type.Optional(Type.Array(Type.String({ pattern: '^\\S{1,200}$' }), { description: 'other names requests may use for this model (what an agent asks for: claude-sonnet-4-5, gpt-5-codex)' })),
}

const PluginEntry = Type.Object({
  path: Type.String({ minLength: 1, description: 'a file path (relative to the config file) or a package name' }),
  options: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
}, { additionalProperties: false })

/**
 * The core's keys of config.yaml, with the shipped defaults; the plugins' keys come with their config sections
 * (core/platform/config-sections.ts assembles the whole). `additionalProperties: false` catches typos.
 */
export const ConfigSchema = Type.Object({
  host: Type.String({ minLength: 1, default: '127.0.0.1' }),
  port: Type.Integer({ minimum: 0, maximum: 65535, default: 11435 }),
  ollama_listen: Type.Union([
    Type.String({ pattern: `^(auto|off|${LISTEN_PATTERN.slice(1, -1)})$` }),
    Type.Null(),
  ], { default: 'auto', description: '"auto" (Ollama\'s own 127.0.0.1:11434 when free), "off" (or null), or an address and port such as "127.0.0.1:11434" or "[::1]:11434"' }),
  data_dir: Type.String({ minLength: 1, default: '~/.llamagate' }),
  models_dir: Type.Union([Type.String({ minLength: 1 }), Type.Null()], { default: null }),
  log_level: Type.Union(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)), { default: 'info' }),
  keep_alive: Type.Union([Duration], { default: '5m' }),
  stream_format: Type.Union([Type.Literal('sse'), Type.Literal('ndjson')], { default: 'sse' }),
  // Closed, unlike a request's options: a typo in config.yaml (num_threadz) is the admin's to hear about.
  default_options: Type.Object(OptionsSchema.properties, {
    additionalProperties: false,
    default: {
      temperature: 0.7, top_p: 0.9, top_k: 40, max_tokens: 2048, seed: -1, num_ctx: 4096,
      num_parallel: 4, cache_type_k: 'f16', cache_type_v: 'f16', dtype: 'f16',
    },
  }),
  // Each model's keys: the core's here; the plugins' come with their sections (core/platform/config-sections.ts assembles them).
  models: Type.Record(Type.String(), Type.Object(MODEL_KEYS, { additionalProperties: false }), { default: {} }),
  limits: Type.Object({
    body_size: Type.Union([Size], { default: '16MiB' }),
    queue_length: Type.Integer({ minimum: 0, default: 64 }),
    max_loaded_models: Type.Integer({ minimum: 1, default: 3 }),
    load_timeout: Type.Union([Duration], { default: '5m' }),
    stream_stall_timeout: Type.Union([Duration], { default: '60s', description: 'a streamed answer whose client reads nothing this long is cut off, and its slot freed' }),
    body_timeout: Type.Union([Duration], { default: '30s', description: 'a request body not received whole this long after its head is cut off (model uploads exempt)' }),
    header_timeout: Type.Union([Duration], { default: '15s', description: 'a connection whose request head has not arrived whole this long is answered 408 and closed' }),
    connections_per_client: Type.Integer({ minimum: 1, default: 256, description: 'open connections one client address may hold; the next is answered 503 and closed' }),
    unauthenticated_connections: Type.Integer({ minimum: 1, default: 128, description: 'with API keys on, open connections no request has shown a valid key on; past it the oldest is closed' }),
    hook_timeout: Type.Union([Duration], { default: '10s', description: 'a plugin\'s hook (an authenticator, a call hook) that has not answered this long fails its request (5xx)' }),
  }, { additionalProperties: false, default: {} }),
  runtime: BUILTIN_RUNTIME_KEYS.runtime,
  build_gpu_runtime: Type.Boolean({ default: true, description: 'a GPU found with its toolkit but no llama.cpp build for it gets one built in the background at start' }),
  runtimes: BUILTIN_RUNTIME_KEYS.runtimes,
  llama_cpp_src: Type.Union([Type.String({ minLength: 1 }), Type.Null()], { default: null }),
  plugins: Type.Array(PluginEntry, { default: [] }),
  shutdown: Type.Object({
    drain_timeout: Type.Union([Duration], { default: '30s' }),
  }, { additionalProperties: false, default: {} }),
}, { additionalProperties: false })

/** The core's keys as written (after defaults); see `Config` for the resolved form the app uses. */
export type RawConfig = Static<typeof ConfigSchema>
/** A runtime kind's name: a built-in's, or one a plugin added. */
export type Backend = BuiltinRuntime | (string & {})
