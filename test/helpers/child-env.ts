/**
 * The environment of a process a test starts: PATH, HOME and the locale from this one, what the test runner
 * needs to follow its children (tap's coverage and TypeScript loader: NODE_OPTIONS, TAP*, _TAPJS_*, TS_NODE_*,
 * NODE_V8_COVERAGE), `LLAMAGATE_OLLAMA_LISTEN=off` (a test that wants a second address names its own, or
 * `undefined` for the config file's), and `extra`. Nothing else: a user's exported LLAMAGATE_PORT, LLAMAGATE_API_KEYS,
 * HF_TOKEN or LLAMA_CPP_SRC must not change what a spawned gateway, CLI or tool does in a test.
 */
export function childEnv (extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {}
  for (const [name, value] of Object.entries(process.env)) {
    if (value !== undefined && (KEPT.has(name) || RUNNER.test(name))) env[name] = value
  }
  // Ollama's port is not the processes' to take (two test processes run at once): a test that wants it says so.
  return { ...env, LLAMAGATE_OLLAMA_LISTEN: 'off', ...extra }
}

const KEPT = new Set(['PATH', 'HOME', 'TMPDIR', 'LANG', 'LC_ALL', 'TZ'])
const RUNNER = /^(NODE_OPTIONS|NODE_V8_COVERAGE|TAP|TAP_[A-Z_]+|_TAPJS_[A-Z_]+_|TS_NODE_[A-Z_]+)$/

/**
 * The environment of a program a user starts by hand: childEnv without the test runner's variables. For a program
 * run by another Node than the suite's: tap's NODE_OPTIONS loads hooks built for this one.
 */
export function userEnv (extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env = childEnv(extra)
  for (const name of Object.keys(env)) if (RUNNER.test(name) && !(name in extra)) delete env[name]
  return env
}
