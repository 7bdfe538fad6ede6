/**
 * An admin's own llama-server arguments for a model (config.yaml's `models.<name>.args`), llama-swap's "any
 * flag": checked against the flags the gateway sets itself, and with model names allowed where llama-server
 * takes a model file (a draft model, LoRA adapters, control vectors).
 */

const MODEL = 'the model is the one named in models.<name>; its file is the store\'s'
const REACH = 'the gateway decides how it reaches llama-server'
const PURPOSE = 'what a model serves (chat, embeddings, reranking) follows from its GGUF and the request'

/** Flags the gateway owns, each with what to do instead. */
const OWNED_FLAGS: Readonly<Record<string, string>> = {
  ...Object.fromEntries(['-m', '--model', '-mu', '--model-url', '-hf', '-hfr', '--hf-repo', '-hff', '--hf-file', '-dr', '--docker-repo'].map((f) => [f, MODEL])),
  ...Object.fromEntries(['--host', '--port', '--path', '--api-prefix', '--api-key', '--api-key-file', '--ssl-key-file', '--ssl-cert-file', '-a', '--alias', '--metrics'].map((f) => [f, REACH])),
  ...Object.fromEntries(['--models-dir', '--models-preset', '--models-max', '--models-autoload', '--no-models-autoload'].map((f) => [f, 'router mode is the gateway\'s job'])),
  ...Object.fromEntries(['--embedding', '--embeddings', '--rerank', '--reranking', '--pooling'].map((f) => [f, PURPOSE])),
  ...Object.fromEntries(['-mm', '--mmproj', '-mmu', '--mmproj-url'].map((f) => [f, 'a vision projector is imported with the model (import --projector)'])),
  ...Object.fromEntries(['-c', '--ctx-size'].map((f) => [f, 'set options.num_ctx (per request, or in models.<name>.options)'])),
  ...Object.fromEntries(['-np', '--parallel'].map((f) => [f, 'set options.num_parallel'])),
  ...Object.fromEntries(['-t', '--threads'].map((f) => [f, 'set options.num_thread'])),
  ...Object.fromEntries(['-ngl', '--gpu-layers', '--n-gpu-layers'].map((f) => [f, 'set options.n_gpu_layers'])),
  ...Object.fromEntries(['-ctk', '--cache-type-k'].map((f) => [f, 'set options.cache_type_k'])),
  ...Object.fromEntries(['-ctv', '--cache-type-v'].map((f) => [f, 'set options.cache_type_v'])),
  '--rpc': 'list the workers in rpc.workers and name them in models.<name>.rpc',
  ...Object.fromEntries(['-ts', '--tensor-split'].map((f) => [f, 'set models.<name>.tensor_split'])),
  '--chat-template': 'set the model\'s template (a Modelfile TEMPLATE, or /api/create)',
  '--chat-template-file': 'set the model\'s template (a Modelfile TEMPLATE, or /api/create)',
}

/** Flags whose value names model files, comma-separated; `:SCALE` follows each in the -scaled ones. */
const MODEL_FILE_FLAGS = new Set(['-md', '--model-draft', '--spec-draft-model', '--lora', '--lora-scaled', '--control-vector', '--control-vector-scaled'])

/** The flag of an argument: `--flag` or the part of `--flag=value` before the `=`; null for a value. */
function flagOf (arg: string): string | null {
  if (!arg.startsWith('-') || /^-\d/.test(arg)) return null
  const eq = arg.indexOf('=')
  return eq === -1 ? arg : arg.slice(0, eq)
}

/** One sentence per owned flag in `args`, saying what to do instead; empty when all is well. */
export function ownedFlagProblems (args: readonly string[]): string[] {
  return args.flatMap((arg) => {
    const flag = flagOf(arg)
    const instead = flag === null ? undefined : OWNED_FLAGS[flag]
    return instead === undefined ? [] : [`${flag} is set by the gateway: ${instead}`]
  })
}

/** A model file item as written: a path (absolute, ./, ../, ~, or a .gguf name) rather than a model name. */
export function isPathItem (item: string): boolean {
  return /^(\/|\.\.?\/|~)/.test(item) || /\.gguf$/i.test(item)
}

/**
 * `args` with each model file item (the values of --model-draft, --lora, ...) mapped through `resolve`, which
 * turns a model name or a path into the file llama-server should open. The `:SCALE` of -scaled items is kept.
 */
export function mapModelFiles (args: readonly string[], resolve: (item: string) => string): string[] {
  const out: string[] = []
  const mapValue = (flag: string, value: string): string => value.split(',').map((item) => {
    if (!flag.endsWith('-scaled')) return resolve(item)
    const colon = item.lastIndexOf(':')
    return colon === -1 ? resolve(item) : `${resolve(item.slice(0, colon))}${item.slice(colon)}`
  }).join(',')
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!
    const flag = flagOf(arg)
    if (flag === null || !MODEL_FILE_FLAGS.has(flag)) { out.push(arg); continue }
    if (arg.includes('=')) { out.push(`${flag}=${mapValue(flag, arg.slice(flag.length + 1))}`); continue }
    out.push(arg)
    if (i + 1 < args.length) out.push(mapValue(flag, args[++i]!))
  }
  return out
}
