import { Type, type Static } from 'typebox'
import { OptionsSchema } from './options-schema.js'

const Duration = Type.Union([Type.Number(), Type.String()], {
  description: 'a duration: seconds as a number, or a string such as "5m", "90s", "1h30m"',
})
const Size = Type.Union([Type.Integer({ minimum: 1 }), Type.String()], {
  description: 'a size: bytes as an integer, or a string such as "16MiB"',
})
// An address and port to listen on: `127.0.0.1:9464`, `[::1]:9464`, `0.0.0.0:11434`.
const LISTEN_PATTERN = '^(\\[[0-9A-Fa-f:.]+\\]|[^\\s:\\[\\]]+):[0-9]{1,5}$'
const BACKENDS = ['cuda', 'rocm', 'metal', 'vulkan', 'cpu'] as const
const Backend = Type.Union(BACKENDS.map((b) => Type.Literal(b)))
const RuntimeBuild = Type.Object({ bin: Type.String({ minLength: 1 }) }, { additionalProperties: false })

const PluginEntry = Type.Object({
  path: Type.String({ minLength: 1, description: 'a file path (relative to the config file) or a package name' }),
  options: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
}, { additionalProperties: false })

/** Every key of config.yaml, with the shipped defaults. `additionalProperties: false` catches typos. */
export const ConfigSchema = Type.Object({
  host: Type.String({ minLength: 1, default: '127.0.0.1' }),
  port: Type.Integer({ minimum: 0, maximum: 65535, default: 11435 }),
  ollama_listen: Type.Union([
    Type.String({ pattern: LISTEN_PATTERN }),
    Type.Null(),
  ], { default: null, description: 'null, or an address and port such as "127.0.0.1:11434" or "[::1]:11434"' }),
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
  models: Type.Record(Type.String(), Type.Object({
    options: Type.Optional(Type.Object(OptionsSchema.properties, { additionalProperties: false })),
    args: Type.Optional(Type.Array(Type.String())),
    preload: Type.Optional(Type.Boolean()),
    keep_alive: Type.Optional(Duration),
    rpc: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { minItems: 1, description: 'names of rpc.workers this model is split across' })),
    aliases: Type.Optional(Type.Array(Type.String({ pattern: '^\\S{1,200}$' }), { description: 'other names requests may use for this model (what an agent asks for: claude-sonnet-4-5, gpt-5-codex)' })),
    tensor_split: Type.Optional(Type.Array(Type.Number({ minimum: 0 }), { minItems: 1, description: 'the share of the layers on each device, in llama-server\'s device order (RPC workers first)' })),
    priority: Type.Optional(Type.Integer({ minimum: -100, maximum: 100, description: 'when models do not fit together, a higher one is swapped in first and out last (default 0)' })),
    pinned: Type.Optional(Type.Boolean({ description: 'never unloaded to make room for another model; reloaded once room is back' })),
  }, { additionalProperties: false }), { default: {} }),
  rpc: Type.Object({
    workers: Type.Array(Type.Object({
      name: Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$' }),
      endpoint: Type.String({ minLength: 1, description: 'host:port of a llamagate rpc-worker (llama.cpp\'s rpc-server)' }),
      allow_public: Type.Optional(Type.Boolean({ description: 'use it even on a public address (the RPC protocol has no authentication)' })),
    }, { additionalProperties: false }), { default: [] }),
  }, { additionalProperties: false, default: {} }),
  upstreams: Type.Array(Type.Object({
    // Shapes beyond the types (name, URL) are checked in config.ts, whose messages say what is wrong.
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
  }, { additionalProperties: false }), { default: [] }),
  upstream_routing: Type.Union([Type.Literal('prefix'), Type.Literal('round_robin')], {
    default: 'prefix', description: 'a model several upstreams list: each conversation to the one its prefix maps to (their prompt caches stay warm), or in turns',
  }),
  limits: Type.Object({
    body_size: Type.Union([Size], { default: '16MiB' }),
    queue_length: Type.Integer({ minimum: 0, default: 64 }),
    max_loaded_models: Type.Integer({ minimum: 1, default: 3 }),
    load_timeout: Type.Union([Duration], { default: '5m' }),
    stream_stall_timeout: Type.Union([Duration], { default: '60s', description: 'a streamed answer whose client reads nothing this long is cut off, and its slot freed' }),
    schema_size: Type.Union([Size], { default: '64KiB', description: 'the largest output schema, grammar or tool schema one request may carry' }),
    schema_alternatives: Type.Integer({ minimum: 1, default: 1024, description: 'the most enum values and consts one such schema may list' }),
    unused_blob_ttl: Type.Union([Duration], { default: '24h', description: 'an uploaded blob no model is made from is removed after this long' }),
    blob_quota: Type.Union([Size, Type.Literal(0), Type.Null()], { default: '200GiB', description: 'the most bytes uploaded blobs no model is made from may hold together; 0 or null: no quota' }),
    body_timeout: Type.Union([Duration], { default: '30s', description: 'a request body not received whole this long after its head is cut off (model uploads exempt)' }),
    progress_timeout: Type.Union([Duration], { default: '5m', description: 'a busy runtime that answers nothing, or moves no slot on, this long is stopped and loaded again' }),
    swap_wait: Type.Union([Duration], { default: '30s', description: 'when models do not fit together, requests for the loaded one go before a swap away from it for at most this long' }),
    min_residency: Type.Union([Duration], { default: '5s', description: 'a model just loaded is not unloaded for another one sooner than this' }),
    header_timeout: Type.Union([Duration], { default: '15s', description: 'a connection whose request head has not arrived whole this long is answered 408 and closed' }),
    connections_per_client: Type.Integer({ minimum: 1, default: 256, description: 'open connections one client address may hold; the next is answered 503 and closed' }),
    unauthenticated_connections: Type.Integer({ minimum: 1, default: 128, description: 'with API keys on, open connections no request has shown a valid key on; past it the oldest is closed' }),
    upstream_answer_size: Type.Union([Size], { default: '64MiB', description: 'the most bytes of one answer read from an upstream, whole or streamed; past it the request ends with an error and the connection is dropped' }),
    upstream_error_size: Type.Union([Size], { default: '64KiB', description: 'the most bytes of an upstream\'s error answer read; the rest is not' }),
    upstream_line_size: Type.Union([Size], { default: '8MiB', description: 'the longest line, event or chunk of an upstream\'s stream held whole' }),
    upstream_models: Type.Integer({ minimum: 1, default: 10000, description: 'the most models one upstream may list; a longer list fails its probe' }),
  }, { additionalProperties: false, default: {} }),
  runtime: Type.Union([Type.Literal('auto'), Backend], { default: 'auto' }),
  build_gpu_runtime: Type.Boolean({ default: true, description: 'a GPU found with its toolkit but no llama.cpp build for it gets one built in the background at start' }),
  runtimes: Type.Object({
    cuda: Type.Optional(RuntimeBuild), rocm: Type.Optional(RuntimeBuild), metal: Type.Optional(RuntimeBuild),
    vulkan: Type.Optional(RuntimeBuild), cpu: Type.Optional(RuntimeBuild),
  }, { additionalProperties: false, default: {} }),
  llama_cpp_src: Type.Union([Type.String({ minLength: 1 }), Type.Null()], { default: null }),
  conversion: Type.Object({
    python: Type.Union([Type.String({ minLength: 1 }), Type.Null()], { default: null }),
    timeout: Type.Union([Duration], { default: '30m' }),
    auto_setup: Type.Boolean({ default: true, description: 'prepare what conversion lacks at start, in the background, where no question needs asking' }),
  }, { additionalProperties: false, default: {} }),
  prompt_cache: Type.Object({
    enabled: Type.Boolean({ default: true, description: 'save the prompt caches of a runtime about to stop, and restore them when its model loads again' }),
    size: Type.Union([Size], { default: '8GiB', description: 'the most bytes saved prompt caches hold together; the least recently used go first' }),
    min_tokens: Type.Integer({ minimum: 1, default: 1024, description: 'a slot holding fewer tokens is not worth saving' }),
  }, { additionalProperties: false, default: {} }),
  hub: Type.Object({
    endpoint: Type.String({ pattern: '^https?://', default: 'https://huggingface.co' }),
    token: Type.Union([Type.String(), Type.Null()], { default: null }),
    allow_private_redirects: Type.Boolean({ default: false, description: 'the hub may redirect downloads to loopback or private addresses of other hosts' }),
  }, { additionalProperties: false, default: {} }),
  auth: Type.Object({
    api_keys: Type.Array(Type.String({ minLength: 1 }), { default: [] }),
    keys_file: Type.String({ minLength: 1, default: 'keys.yaml', description: 'the keys `llamagate keys` hands out, with scopes and limits (relative to data_dir); re-read when it changes' }),
    require_keys_off_loopback: Type.Boolean({ default: false }),
  }, { additionalProperties: false, default: {} }),
  cors: Type.Object({
    origins: Type.Array(Type.String({ minLength: 1 }), {
      default: [
        'http://localhost', 'http://localhost:*', 'https://localhost', 'https://localhost:*',
        'http://127.0.0.1', 'http://127.0.0.1:*', 'https://127.0.0.1', 'https://127.0.0.1:*',
        'http://[::1]', 'http://[::1]:*', 'app://*', 'file://*', 'tauri://*', 'vscode-webview://*',
      ],
    }),
  }, { additionalProperties: false, default: {} }),
  allowed_hosts: Type.Array(Type.String({ minLength: 1 }), { default: [] }),
  vision: Type.Object({
    allow_remote_images: Type.Boolean({ default: false }),
    allow_private_image_hosts: Type.Boolean({ default: false, description: 'image URLs may be on loopback or private addresses' }),
    max_remote_images: Type.Integer({ minimum: 1, default: 8, description: 'the most image URLs fetched for one request' }),
    max_remote_image_bytes: Type.Union([Size], { default: '20MiB', description: 'the most bytes fetched for one request\'s images together' }),
  }, { additionalProperties: false, default: {} }),
  metrics: Type.Object({
    enabled: Type.Boolean({ default: true }),
    listen: Type.Union([
      Type.String({ pattern: LISTEN_PATTERN }),
      Type.Null(),
    ], { default: null, description: 'null, or an address and port such as "127.0.0.1:9464" or "[::1]:9464"' }),
  }, { additionalProperties: false, default: {} }),
  plugins: Type.Array(PluginEntry, { default: [] }),
  shutdown: Type.Object({
    drain_timeout: Type.Union([Duration], { default: '30s' }),
  }, { additionalProperties: false, default: {} }),
}, { additionalProperties: false })

/** The config as written (after defaults); see `Config` for the resolved form the app uses. */
export type RawConfig = Static<typeof ConfigSchema>
export type Backend = (typeof BACKENDS)[number]
export { BACKENDS }
