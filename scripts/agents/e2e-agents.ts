import { spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { PACKAGE_ROOT } from '../../core/base/paths.js'
import { realisticModel } from '../../test/helpers/realistic-models.js'
import { cpuRuntime } from '../../test/helpers/runtime.js'
import { installed, nodeBinary, type NodeMajor } from './agent-install.js'
import { startGatewayProcess } from '../gateway-process.js'

/**
 * `npm run e2e:agents`: the coding agents themselves, installed from npm at pinned versions (under
 * ~/.llamagate/agents), each started by `llamagate launch` against a real `llamagate serve` and llama-server with
 * the `agent` fixture (Qwen2.5's template, a 32k trained context; it calls one of the offered tools, then answers
 * "Done" once the result is back), non-interactively, in a temporary HOME and working folder, for one turn that
 * asks for a command to be run: the agent sends its first request, runs the tool the model calls, sends the result
 * back and finishes. The server asks for a key, which launch takes from LLAMAGATE_API_KEY: no process's command line
 * may hold it while the agent runs (sampled from /proc), no file in HOME may hold it after, and every file that was in
 * HOME before (the user's own settings) must be as it was once launch returns. Agents marked `loopbackOnly` get
 * proxy variables that leave them only loopback. Writes what happened to docs/e2e-agents.json and a table to docs/e2e-agents.md;
 * exits 1 when an agent did not finish with exit 0 after a tool round trip, or failed either check.
 *
 * Flags: `--agents claude,codex,...` (all by default), `--timeout S` (600 per agent), `--keep`.
 */

interface AgentSetup {
  npmPackage: string
  version: string
  /** The program `llamagate launch` finds on PATH, once installed. */
  bin: (dir: string) => string
  /** Arguments for one non-interactive turn (after `--`). */
  turn: (prompt: string) => string[]
  /** Environment of its own: telemetry and update checks off. */
  env: Record<string, string>
  /** A newer Node for its launcher (Qwen Code's engines field: 22; OpenClaw's: 24, which its install checks too). */
  node?: NodeMajor
  /** Settings files in its HOME, by path: what a user's own configuration says. */
  files?: Record<string, unknown>
  /** Other agents it starts itself, which must be on PATH too (Claude Code Router starts Claude Code). */
  needs?: string[]
  /**
   * Only loopback: HTTP(S)_PROXY point at a closed port (NO_PROXY lets loopback through), so a request to any other
   * host fails at once instead of leaving the machine (for clients that honour the proxy variables).
   */
  loopbackOnly?: boolean
}

// The versions the captures in test/fixtures/agents were taken with (2026-11-25).
const AGENTS: Record<string, AgentSetup> = {
  claude: {
    npmPackage: '@anthropic-ai/claude-code', version: '2.1.331',
    bin: (dir) => join(dir, 'node_modules/@anthropic-ai/claude-code/bin/claude.exe'),
    // As root Claude Code refuses --dangerously-skip-permissions; allowing its two tools is what -p needs.
    turn: (prompt) => ['-p', prompt, '--output-format', 'json', '--allowedTools', 'Bash', 'Read'],
    env: { CI: '1', DISABLE_TELEMETRY: '1', DISABLE_AUTOUPDATER: '1', DISABLE_ERROR_REPORTING: '1' },
  },
  codex: {
    npmPackage: '@openai/codex', version: '0.169.0',
    bin: (dir) => join(dir, 'node_modules/.bin/codex'),
    turn: (prompt) => ['-c', 'approval_policy="never"', '-c', 'sandbox_mode="danger-full-access"', '-c', 'check_for_update_on_startup=false', 'exec', '--skip-git-repo-check', '--json', prompt],
    env: {},
  },
  opencode: {
    npmPackage: 'opencode-ai', version: '1.18.33',
    bin: (dir) => join(dir, 'node_modules/opencode-ai/bin/opencode.exe'),
    turn: (prompt) => ['run', '--format', 'json', prompt],
    env: { OPENCODE_DISABLE_AUTOUPDATE: '1', OPENCODE_DISABLE_MODELS_FETCH: '1', OPENCODE_DISABLE_LSP_DOWNLOAD: '1', OPENCODE_DISABLE_SHARE: '1' },
    // Its tools allowed for the run, as a user's config file says it (launch's inline config adds the provider), with
    // the `$schema` opencode adds to a global config that lacks it on its first run, launch or not.
    files: { '.config/opencode/opencode.json': { $schema: 'https://opencode.ai/config.json', permission: { bash: 'allow', edit: 'allow', read: 'allow' }, autoupdate: false, share: 'disabled' } },
  },
  qwen: {
    npmPackage: '@qwen-code/qwen-code', version: '0.24.4', node: 22,
    bin: (dir) => join(dir, 'node_modules/@qwen-code/qwen-code/cli-entry.js'),
    turn: (prompt) => ['-p', prompt, '--output-format', 'json', '--approval-mode', 'yolo'],
    env: { QWEN_CODE_SUPPRESS_YOLO_WARNING: '1' },
    // With the `$version` its settings migration writes into a file that lacks it on its first run, launch or not.
    files: { '.qwen/settings.json': { privacy: { usageStatisticsEnabled: false }, general: { enableAutoUpdate: false }, telemetry: { enabled: false }, $version: 4 } },
  },
  pi: {
    npmPackage: '@mariozechner/pi-coding-agent', version: '0.73.1',
    bin: (dir) => join(dir, 'node_modules/.bin/pi'),
    // -p: one prompt, then exit; pi asks no permission for its tools.
    turn: (prompt) => ['-p', prompt],
    env: {},
    // A user's own pi: another default model and a provider of theirs, which launch's extension leaves alone.
    files: {
      '.pi/agent/settings.json': { defaultProvider: 'anthropic', defaultModel: 'claude-sonnet-4-5', quietStartup: true },
      '.pi/agent/models.json': { providers: { ollama: { baseUrl: 'http://127.0.0.1:11434/v1', api: 'openai-completions', apiKey: 'ollama', models: [{ id: 'llama3.1:8b' }] } } },
    },
    loopbackOnly: true,
  },
  kilo: {
    // The native binary of its platform package (7.8.1's platform packages were not published: 7.7.7 has them).
    npmPackage: '@kilocode/cli', version: '7.7.7',
    bin: (dir) => join(dir, 'node_modules/@kilocode/cli-linux-x64/bin/kilo'),
    turn: (prompt) => ['run', '--format', 'json', '--auto', prompt],
    env: { KILO_DISABLE_LSP_DOWNLOAD: '1', KILO_DISABLE_SHARE: '1' },
    // A user's config as Kilo leaves it after its first run: its one-time migration (the marker file) adds
    // `permission.bash` and `$schema` to a global config that lacks them, launch or not.
    files: {
      '.config/kilo/kilo.json': { $schema: 'https://app.kilo.ai/config.json', autoupdate: false, share: 'disabled', permission: { bash: 'allow' } },
      '.config/kilo/.bash-permission-migrated': '',
    },
    loopbackOnly: true,
  },
  copilot: {
    npmPackage: '@github/copilot', version: '1.0.102',
    bin: (dir) => join(dir, 'node_modules/@github/copilot-linux-x64/copilot'),
    turn: (prompt) => ['-p', prompt, '--allow-all-tools', '--no-ask-user', '--no-auto-update', '--stream', 'off'],
    env: {},
    files: { '.copilot/settings.json': { theme: 'dark' } },
    loopbackOnly: true,
  },
  // 2026-11-26.
  cline: {
    npmPackage: 'cline', version: '3.0.65',
    bin: (dir) => join(dir, 'node_modules/cline/bin/cline'),
    // One shot, tools approved (its default); not --yolo, which holds the run open until the model calls submit_and_exit.
    turn: (prompt) => ['--json', prompt],
    env: { CLINE_NO_AUTO_UPDATE: '1' },
    files: { '.cline/data/settings/global-settings.json': { telemetryOptOut: true, autoUpdateEnabled: false } },
    loopbackOnly: true,
  },
  openclaw: {
    npmPackage: 'openclaw', version: '2026.9.6', node: 24,
    bin: (dir) => join(dir, 'node_modules/openclaw/openclaw.mjs'),
    // Its headless one-turn entry (docs/cli/agent.md), with a temporary state folder of its own.
    turn: (prompt) => ['agent', 'exec', '--json', prompt],
    env: {},
    // The user's config, which launch's includes: its update check stays off through that.
    files: { '.openclaw/openclaw.json': { update: { checkOnStart: false } } },
    loopbackOnly: true,
  },
  // 3.1.1, the newest, depends on @the-next-ai/ai-gateway, which the registry does not have (404).
  ccr: {
    npmPackage: '@musistudio/claude-code-router', version: '2.0.0', needs: ['claude'],
    bin: (dir) => join(dir, 'node_modules/@musistudio/claude-code-router/dist/cli.js'),
    // CCR passes Claude Code only the flags minimist found (its positionals are dropped): one list for the tools.
    turn: (prompt) => ['-p', prompt, '--output-format', 'json', '--allowedTools', 'Bash,Read'],
    env: { CI: '1', DISABLE_TELEMETRY: '1', DISABLE_AUTOUPDATER: '1', DISABLE_ERROR_REPORTING: '1' },
    // The user's config: launch merges its provider in and puts this back.
    files: { '.claude-code-router/config.json': { LOG: false, API_TIMEOUT_MS: 600000 } },
    loopbackOnly: true,
  },
}
const MODEL = 'llamagate/agent'
/** The server's key: launch reads it from LLAMAGATE_API_KEY; it must reach the agent by its environment or a private file. */
const KEY = `sk-e2e-${process.pid}-4f1c9a7d2b`
const PROMPT = 'Run the shell command `echo hello-from-tool` and tell me its output.'

interface Outcome {
  agent: string
  version: string
  exitCode: number | null
  seconds: number
  requests: Array<{ path: string, status: number, promptTokens?: number, generatedTokens?: number }>
  toolRoundTrip: boolean
  /** Command lines seen holding the key while the agent ran. */
  keyInArgv: string[]
  /** Files of the user's (in HOME before the run) not as they were once launch returned, and what launch left (records, its folder). */
  changedFiles: string[]
  /** Files in HOME holding the key. */
  keyInFiles: string[]
  /** Files the agent made in HOME (its sessions, caches, logs): not the user's, counted. */
  filesCreated?: number
  /** When this agent ran (rows of agents not run this time are kept from earlier runs). */
  when?: string
  tail: string
}

function say (line: string): void { process.stdout.write(`${line}\n`) }

function run (command: string, args: string[], options: { env?: NodeJS.ProcessEnv, cwd?: string, timeoutMs?: number } = {}): Promise<{ code: number | null, output: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { env: options.env ?? process.env, cwd: options.cwd, stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    const keep = (d: Buffer): void => { output = (output + d.toString('utf8')).slice(-20_000) }
    child.stdout.on('data', keep)
    child.stderr.on('data', keep)
    const timer = options.timeoutMs ? setTimeout(() => child.kill('SIGKILL'), options.timeoutMs) : null
    child.once('close', (code) => { if (timer) clearTimeout(timer); resolve({ code, output }) })
  })
}

/** A folder of programs named as `llamagate launch` looks for them, each starting the installed agent. */
async function binFolder (root: string, agents: string[]): Promise<string> {
  const bin = join(root, 'bin')
  await mkdir(bin, { recursive: true })
  for (const agent of new Set(agents.flatMap((a) => [...(AGENTS[a]!.needs ?? []), a]))) {
    const setup = AGENTS[agent]!
    const node = setup.node !== undefined ? await nodeBinary(setup.node, { log: say }) : undefined
    const target = setup.bin(await installed(setup.npmPackage, setup.version, { log: say, node }))
    let launcher = `exec '${target}' "$@"`
    if (node !== undefined) {
      // Its bundled ripgrep ships without the execute bit.
      const rg = join(target, '..', 'vendor/ripgrep/x64-linux/rg')
      if (existsSync(rg)) await chmod(rg, 0o755)
      launcher = `exec '${node}' '${target}' "$@"`
    }
    await writeFile(join(bin, agent), `#!/bin/sh\n${launcher}\n`)
    await chmod(join(bin, agent), 0o755)
  }
  return bin
}

/** The access log's request lines of one agent's run: what it asked and what it got. */
function requestsIn (log: string): Outcome['requests'] {
  return log.split('\n').flatMap((line) => {
    try {
      const entry = JSON.parse(line) as { msg?: string, path?: string, status?: number, promptTokens?: number, generatedTokens?: number }
      if (!entry.msg?.startsWith('request') || entry.path === undefined || entry.status === undefined) return []
      return [{ path: entry.path, status: entry.status, ...(entry.promptTokens !== undefined ? { promptTokens: entry.promptTokens, generatedTokens: entry.generatedTokens } : {}) }]
    } catch {
      return []
    }
  })
}

/** Samples every process's command line (/proc) until stopped: those that hold `key`. */
function watchArgv (key: string): { stop: () => string[] } {
  const seen = new Set<string>()
  const sample = (): void => {
    for (const pid of readdirSync('/proc')) {
      if (!/^\d+$/.test(pid)) continue
      try {
        const line = readFileSync(`/proc/${pid}/cmdline`, 'utf8')
        if (line.includes(key)) seen.add(line.replace(/\0/g, ' ').slice(0, 300))
      } catch {
        // Gone between the listing and the read.
      }
    }
  }
  const timer = setInterval(sample, 100)
  return { stop: () => { clearInterval(timer); sample(); return [...seen] } }
}

/** The watcher itself: a process holding the key in its command line is seen (else its "none" would mean nothing). */
async function watcherSees (): Promise<void> {
  const argv = watchArgv(KEY)
  // A program that takes any argument and waits (sleep would refuse the key as a time and exit at once).
  const decoy = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 30000)', KEY], { stdio: 'ignore' })
  await new Promise((resolve) => decoy.once('spawn', resolve))
  // 'spawn' can come before the child's exec; the watcher samples every 100 ms: wait until the decoy shows its key.
  const deadline = Date.now() + 5000
  while (Date.now() < deadline && !(await readFile(`/proc/${decoy.pid}/cmdline`, 'latin1').catch(() => '')).includes(KEY)) await new Promise((resolve) => setTimeout(resolve, 50))
  const seen = argv.stop()
  decoy.kill()
  if (!seen.some((line) => line.startsWith(`${process.execPath} -e`))) throw new Error('the command-line watcher did not see a process that holds the key')
}

/** Every file under `dir`, by path. */
async function filesUnder (dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => [])
  return entries.filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name))
}

/** Every file under `dir` (but `skip`) with a hash of its content. */
async function snapshot (dir: string, skip: string): Promise<Map<string, string>> {
  const files = new Map<string, string>()
  for (const path of await filesUnder(dir)) {
    if (path.startsWith(skip)) continue
    files.set(path.slice(dir.length + 1), createHash('sha256').update(await readFile(path)).digest('hex'))
  }
  return files
}

/**
 * What launch left that it should not have: a file of the user's (in HOME before the run) changed or removed, a
 * merge record or a version kept beside a merged file, its private settings folder; and files in HOME holding the key.
 */
async function leftovers (before: Map<string, string>, home: string, work: string, tmp: string): Promise<{ changedFiles: string[], keyInFiles: string[], filesCreated: number }> {
  const after = await snapshot(home, work)
  const changedFiles = [...before].filter(([path, hash]) => after.get(path) !== hash).map(([path]) => `~/${path}`)
  for (const path of after.keys()) if (path.startsWith('.llamagate/launch-backups/') || path.endsWith('.from-launch')) changedFiles.push(`~/${path}`)
  for (const entry of await readdir(tmp).catch(() => [] as string[])) if (entry.startsWith('llamagate-')) changedFiles.push(join(tmp, entry))
  const keyInFiles: string[] = []
  for (const file of await filesUnder(home)) {
    const data = await readFile(file).catch(() => Buffer.alloc(0))
    if (data.includes(KEY)) keyInFiles.push(file.replace(home, '~'))
  }
  return { changedFiles, keyInFiles, filesCreated: [...after.keys()].filter((path) => !before.has(path)).length }
}

/** Outcomes of earlier runs (docs/e2e-agents.json) of agents not run this time: a run of some agents keeps the rest. */
async function earlierOutcomes (ran: string[]): Promise<Outcome[]> {
  try {
    const earlier = JSON.parse(await readFile(join(PACKAGE_ROOT, 'docs/e2e-agents.json'), 'utf8')) as { when?: string, outcomes?: Outcome[] }
    return (earlier.outcomes ?? []).filter((o) => !ran.includes(o.agent) && o.agent in AGENTS).map((o) => ({ ...o, when: o.when ?? earlier.when }))
  } catch {
    return []
  }
}

async function main (): Promise<void> {
  const { values } = parseArgs({ options: { agents: { type: 'string', default: Object.keys(AGENTS).join(',') }, timeout: { type: 'string', default: '600' }, keep: { type: 'boolean', default: false } } })
  const agents = values.agents.split(',')
  for (const agent of agents) if (!(agent in AGENTS)) throw new Error(`unknown agent ${agent}: one of ${Object.keys(AGENTS).join(', ')}`)
  const root = await mkdtemp(join(tmpdir(), 'llamagate-e2e-'))
  const bin = await binFolder(root, agents)
  const runtime = await cpuRuntime()
  const config = join(root, 'config.yaml')
  // One thread for llama-server on a small machine (its default spins on every core); the agents' prompts are
  // 8k-19k tokens, which the gateway fits by loading a larger context.
  await writeFile(config, `port: 0\ndata_dir: ${JSON.stringify(join(root, 'data'))}\nlog_level: info\nruntime: cpu\nruntimes: { cpu: { bin: ${JSON.stringify(runtime.binDir)} } }\ndefault_options: { num_thread: 1, num_parallel: 1 }\nauth: { api_keys: [${KEY}] }\n`)
  const cli = join(PACKAGE_ROOT, 'dist/core/cli/cli.js')
  const imported = await run(process.execPath, [cli, 'import', MODEL, await realisticModel('agent'), '--config', config])
  if (imported.code !== 0) throw new Error(`import failed: ${imported.output}`)
  await watcherSees()
  const logFile = join(root, 'gateway.log')
  const gateway = await startGatewayProcess(config, logFile)
  const outcomes: Outcome[] = []
  try {
    for (const agent of agents) {
      const setup = AGENTS[agent]!
      const home = join(root, `home-${agent}`)
      const work = join(home, 'work')
      // Its own temporary folder: launch's private settings folder and what the agent writes there stay in view.
      const tmp = join(root, `tmp-${agent}`)
      await mkdir(work, { recursive: true })
      await mkdir(tmp, { recursive: true })
      for (const [path, content] of Object.entries(setup.files ?? {})) {
        await mkdir(join(home, path, '..'), { recursive: true })
        await writeFile(join(home, path), typeof content === 'string' ? content : JSON.stringify(content, null, 2))
      }
      const logBefore = (await readFile(logFile, 'utf8')).length
      say(`${agent} ${setup.version}: one turn with a tool call`)
      const before = await snapshot(home, work)
      const started = performance.now()
      const argv = watchArgv(KEY)
      const offline = setup.loopbackOnly === true ? { HTTP_PROXY: 'http://127.0.0.1:9', HTTPS_PROXY: 'http://127.0.0.1:9', NO_PROXY: '127.0.0.1,localhost,::1' } : {}
      const result = await run(process.execPath, [cli, 'launch', agent, '--model', MODEL, '--host', gateway.url, '--', ...setup.turn(PROMPT)], {
        cwd: work,
        timeoutMs: Number(values.timeout) * 1000,
        env: { HOME: home, TMPDIR: tmp, PATH: `${bin}:/usr/local/bin:/usr/bin:/bin`, TERM: 'dumb', LANG: 'C.UTF-8', NO_COLOR: '1', LLAMAGATE_API_KEY: KEY, ...offline, ...setup.env },
      })
      const keyInArgv = argv.stop()
      const { changedFiles, keyInFiles, filesCreated } = await leftovers(before, home, work, tmp)
      const requests = requestsIn((await readFile(logFile, 'utf8')).slice(logBefore))
      const generating = requests.filter((r) => /\/v1\/(messages|chat\/completions|responses)$/.test(r.path) && r.status === 200)
      const outcome: Outcome = {
        agent, version: setup.version, exitCode: result.code, seconds: Math.round((performance.now() - started) / 100) / 10, requests,
        // The result of the call went back to the model: a second answered request in the same turn.
        toolRoundTrip: generating.length >= 2,
        keyInArgv,
        changedFiles,
        keyInFiles,
        filesCreated,
        when: new Date().toISOString(),
        tail: result.output.slice(-1500),
      }
      outcomes.push(outcome)
      say(`  exit ${outcome.exitCode} in ${outcome.seconds} s; ${requests.length} requests (${requests.map((r) => `${r.path} ${r.status}${r.promptTokens !== undefined ? ` ${r.promptTokens}+${r.generatedTokens}` : ''}`).join(', ')}); tool round trip: ${outcome.toolRoundTrip}`)
      say(`  key in argv: ${keyInArgv.length > 0 ? keyInArgv.join(' | ') : 'none'}; key in HOME's files: ${keyInFiles.join(', ') || 'none'}; left changed: ${changedFiles.join(', ') || 'nothing'}`)
    }
  } finally {
    gateway.child.kill('SIGTERM')
    await new Promise((resolve) => gateway.child.once('exit', resolve))
    if (!values.keep) await rm(root, { recursive: true, force: true })
  }
  const ok = outcomes.every(passed)
  const when = new Date().toISOString()
  const all = [...await earlierOutcomes(agents), ...outcomes].sort((a, b) => Object.keys(AGENTS).indexOf(a.agent) - Object.keys(AGENTS).indexOf(b.agent))
  await writeFile(join(PACKAGE_ROOT, 'docs/e2e-agents.json'), `${JSON.stringify({ when, model: MODEL, prompt: PROMPT, outcomes: all }, null, 2)}\n`)
  const clean = (o: Outcome): string => o.keyInArgv === undefined ? 'not checked' : [...o.keyInArgv, ...o.keyInFiles, ...o.changedFiles].length === 0 ? 'yes' : 'NO'
  const rows = all.map((o) => `| ${o.agent} ${o.version} | ${o.when?.slice(0, 10) ?? ''} | ${o.exitCode} | ${o.toolRoundTrip ? 'yes' : 'no'} | ${clean(o)} | ${o.seconds} s | ${o.requests.map((r) => `${r.path} ${r.status}${r.promptTokens !== undefined ? ` (${r.promptTokens} → ${r.generatedTokens})` : ''}`).join('<br>')} |`)
  await writeFile(join(PACKAGE_ROOT, 'docs/e2e-agents.md'), [
    '# Coding agents against llamagate, end to end',
    '',
    `Written by \`npm run e2e:agents\` on ${when}: each agent installed from npm, started by \`llamagate launch\` against a`,
    'real `llamagate serve` and llama-server (CPU, one thread) with the `agent` fixture, asked once:',
    `"${PROMPT}". The fixture calls one of the tools offered, then answers "Done" once the result is back: a turn`,
    'finishes only after a tool round trip. Requests as the access log saw them (prompt → generated tokens).',
    '',
    'The server asks for a key, given to launch as LLAMAGATE_API_KEY: "clean" says no command line held it while the agent',
    'ran (sampled from /proc), no file in HOME held it, and every file in HOME before the run (the user\'s own settings)',
    'was as before once launch returned, with no merge record or private settings folder left behind.',
    '',
    '| agent | run on | exit | tool round trip | clean | time | requests |',
    '|---|---|---|---|---|---|---|',
    ...rows,
    '',
  ].join('\n'))
  say(ok ? 'every agent finished its turn' : 'NOT every agent finished its turn after a tool round trip')
  if (!ok) process.exitCode = 1
}

function passed (o: Outcome): boolean {
  return o.exitCode === 0 && o.toolRoundTrip && o.keyInArgv.length === 0 && o.keyInFiles.length === 0 && o.changedFiles.length === 0
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`)
  process.exit(1)
})
