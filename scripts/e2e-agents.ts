import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { PACKAGE_ROOT } from '../core/paths.js'
import { realisticModel } from '../test/helpers/realistic-models.js'
import { cpuRuntime } from '../test/helpers/runtime.js'
import { installed, nodeBinary } from './agent-install.js'
import { startGatewayProcess } from './gateway-process.js'

/**
 * `npm run e2e:agents`: the coding agents themselves, installed from npm at pinned versions (under
 * ~/.llamagate/agents), each started by `llamagate launch` against a real `llamagate serve` and llama-server with
 * the `agent` fixture (Qwen2.5's template, a 32k trained context; it calls one of the offered tools, then answers
 * "Done" once the result is back), non-interactively, in a temporary HOME and working folder, for one turn that
 * asks for a command to be run: the agent sends its first request, runs the tool the model calls, sends the result
 * back and finishes. Writes what happened to docs/e2e-agents.json and a table to docs/e2e-agents.md; exits 1 when
 * an agent did not finish with exit 0 after a tool round trip.
 *
 * Flags: `--agents claude,codex,opencode,qwen` (all by default), `--timeout S` (600 per agent), `--keep`.
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
  /** Node 22 for its launcher (Qwen Code's engines field). */
  node22?: boolean
  /** Settings files in its HOME, by path: what a user's own configuration says. */
  files?: Record<string, unknown>
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
    // Its tools allowed for the run, as a user's config file says it (launch's inline config adds the provider).
    files: { '.config/opencode/opencode.json': { permission: { bash: 'allow', edit: 'allow', read: 'allow' }, autoupdate: false, share: 'disabled' } },
  },
  qwen: {
    npmPackage: '@qwen-code/qwen-code', version: '0.24.4', node22: true,
    bin: (dir) => join(dir, 'node_modules/@qwen-code/qwen-code/cli-entry.js'),
    turn: (prompt) => ['-p', prompt, '--output-format', 'json', '--approval-mode', 'yolo'],
    env: { QWEN_CODE_SUPPRESS_YOLO_WARNING: '1' },
    files: { '.qwen/settings.json': { privacy: { usageStatisticsEnabled: false }, general: { enableAutoUpdate: false }, telemetry: { enabled: false } } },
  },
}
const MODEL = 'llamagate/agent'
const PROMPT = 'Run the shell command `echo hello-from-tool` and tell me its output.'

interface Outcome { agent: string, version: string, exitCode: number | null, seconds: number, requests: Array<{ path: string, status: number, promptTokens?: number, generatedTokens?: number }>, toolRoundTrip: boolean, tail: string }

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
  for (const agent of agents) {
    const setup = AGENTS[agent]!
    const target = setup.bin(await installed(setup.npmPackage, setup.version, { log: say }))
    let launcher = `exec '${target}' "$@"`
    if (setup.node22) {
      const node = await nodeBinary(22, { log: say })
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
  await writeFile(config, `port: 0\ndata_dir: ${JSON.stringify(join(root, 'data'))}\nlog_level: info\nruntime: cpu\nruntimes: { cpu: { bin: ${JSON.stringify(runtime.binDir)} } }\ndefault_options: { num_thread: 1, num_parallel: 1 }\n`)
  const cli = join(PACKAGE_ROOT, 'dist/core/cli.js')
  const imported = await run(process.execPath, [cli, 'import', MODEL, await realisticModel('agent'), '--config', config])
  if (imported.code !== 0) throw new Error(`import failed: ${imported.output}`)
  const logFile = join(root, 'gateway.log')
  const gateway = await startGatewayProcess(config, logFile)
  const outcomes: Outcome[] = []
  try {
    for (const agent of agents) {
      const setup = AGENTS[agent]!
      const home = join(root, `home-${agent}`)
      const work = join(home, 'work')
      await mkdir(work, { recursive: true })
      for (const [path, content] of Object.entries(setup.files ?? {})) {
        await mkdir(join(home, path, '..'), { recursive: true })
        await writeFile(join(home, path), JSON.stringify(content))
      }
      const logBefore = (await readFile(logFile, 'utf8')).length
      say(`${agent} ${setup.version}: one turn with a tool call`)
      const started = performance.now()
      const result = await run(process.execPath, [cli, 'launch', agent, '--model', MODEL, '--host', gateway.url, '--', ...setup.turn(PROMPT)], {
        cwd: work,
        timeoutMs: Number(values.timeout) * 1000,
        env: { HOME: home, PATH: `${bin}:/usr/local/bin:/usr/bin:/bin`, TERM: 'dumb', LANG: 'C.UTF-8', NO_COLOR: '1', ...setup.env },
      })
      const requests = requestsIn((await readFile(logFile, 'utf8')).slice(logBefore))
      const generating = requests.filter((r) => /\/v1\/(messages|chat\/completions|responses)$/.test(r.path) && r.status === 200)
      const outcome: Outcome = {
        agent, version: setup.version, exitCode: result.code, seconds: Math.round((performance.now() - started) / 100) / 10, requests,
        // The result of the call went back to the model: a second answered request in the same turn.
        toolRoundTrip: generating.length >= 2,
        tail: result.output.slice(-1500),
      }
      outcomes.push(outcome)
      say(`  exit ${outcome.exitCode} in ${outcome.seconds} s; ${requests.length} requests (${requests.map((r) => `${r.path} ${r.status}${r.promptTokens !== undefined ? ` ${r.promptTokens}+${r.generatedTokens}` : ''}`).join(', ')}); tool round trip: ${outcome.toolRoundTrip}`)
    }
  } finally {
    gateway.child.kill('SIGTERM')
    await new Promise((resolve) => gateway.child.once('exit', resolve))
    if (!values.keep) await rm(root, { recursive: true, force: true })
  }
  const ok = outcomes.every((o) => o.exitCode === 0 && o.toolRoundTrip)
  const when = new Date().toISOString()
  await writeFile(join(PACKAGE_ROOT, 'docs/e2e-agents.json'), `${JSON.stringify({ when, model: MODEL, prompt: PROMPT, outcomes }, null, 2)}\n`)
  const rows = outcomes.map((o) => `| ${o.agent} ${o.version} | ${o.exitCode} | ${o.toolRoundTrip ? 'yes' : 'no'} | ${o.seconds} s | ${o.requests.map((r) => `${r.path} ${r.status}${r.promptTokens !== undefined ? ` (${r.promptTokens} → ${r.generatedTokens})` : ''}`).join('<br>')} |`)
  await writeFile(join(PACKAGE_ROOT, 'docs/e2e-agents.md'), [
    '# Coding agents against llamagate, end to end',
    '',
    `Written by \`npm run e2e:agents\` on ${when}: each agent installed from npm, started by \`llamagate launch\` against a`,
    'real `llamagate serve` and llama-server (CPU, one thread) with the `agent` fixture, asked once:',
    `"${PROMPT}". The fixture calls one of the tools offered, then answers "Done" once the result is back: a turn`,
    'finishes only after a tool round trip. Requests as the access log saw them (prompt → generated tokens).',
    '',
    '| agent | exit | tool round trip | time | requests |',
    '|---|---|---|---|---|',
    ...rows,
    '',
  ].join('\n'))
  say(ok ? 'every agent finished its turn' : 'NOT every agent finished its turn after a tool round trip')
  if (!ok) process.exitCode = 1
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`)
  process.exit(1)
})
