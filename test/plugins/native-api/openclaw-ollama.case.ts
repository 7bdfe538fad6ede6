import { spawn } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { mkdir, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import t from 'tap'
import { agentCommand, TEST_AGENTS } from '../../../scripts/agents/test-agents.js'
import { tempDir } from '../../helpers/app.js'
import { serveRealisticModels } from '../../helpers/inference.js'
import { holdOllamaPort } from '../../helpers/ollama-port.js'
import { processesWithMark } from '../../helpers/serve-process.js'

// OpenClaw (on Node 24, as its engines field wants) with its Ollama provider configured as its docs' manual setup
// says: OLLAMA_API_KEY="ollama-local" and `agents.defaults.model.primary: "ollama/<model>"` in ~/.openclaw/openclaw.json,
// no base URL (its default, http://127.0.0.1:11434), served by ollama_listen: auto. It streams /api/chat and reads
// NDJSON only: on the main address (SSE) it fails with malformed_streaming_fragment. One `agent exec` turn with the
// `agent` fixture: it calls one of OpenClaw's tools, gets the result back, and answers "Done".

const PROMPT = 'Run the shell command `echo hello-from-tool` and tell me its output.'
const TURN_TIMEOUT_MS = 240_000

interface Run { code: number | null, stdout: string, stderr: string }

function run (command: string, args: string[], options: { env: NodeJS.ProcessEnv, cwd: string }): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d) => { stdout += d })
    child.stderr.on('data', (d) => { stderr += d })
    const timer = setTimeout(() => child.kill('SIGKILL'), TURN_TIMEOUT_MS)
    child.once('error', reject)
    child.once('close', (code) => { clearTimeout(timer); resolve({ code, stdout, stderr }) })
  })
}

t.test(`OpenClaw ${TEST_AGENTS.openclaw.version} with its Ollama provider at its default address: one agent turn, a tool round trip, streamed`, async (t) => {
  const [node, openclaw] = await agentCommand('openclaw', (line) => t.comment(line))
  await holdOllamaPort(t)
  const { app } = await serveRealisticModels(t, { 'acme/agent': 'agent' }, { ollama_listen: 'auto', default_options: { max_tokens: 256 } })
  // What the gateway answered each request, as OpenClaw got it (the Ollama address's connections are the app's): the
  // head as sent, since a stream's is written whole by writeHead, out of getHeader's sight.
  const answered: Array<{ path: string, status: number, type: string }> = []
  // What it asked, answered or not: OpenClaw may give up on a side request (/api/show) on a busy machine before its
  // answer is out, and then its response never finishes.
  const asked: string[] = []
  app.server.on('request', (req) => { asked.push(req.url!) })
  app.server.on('request', (req, res) => res.once('finish', () => {
    const head = (res as unknown as { _header: string | null })._header ?? ''
    answered.push({ path: req.url!, status: res.statusCode, type: /^content-type: *(.*)$/im.exec(head)?.[1]?.trim() ?? '' })
  }))

  const home = await tempDir(t, 'llamagate-openclaw-')
  await mkdir(join(home, '.openclaw'))
  await writeFile(join(home, '.openclaw/openclaw.json'), JSON.stringify({ agents: { defaults: { model: { primary: 'ollama/acme/agent' } } } }))
  await mkdir(join(home, 'work'))
  await mkdir(join(home, 'tmp'))
  const mark = randomUUID()
  const result = await run(node, [openclaw, 'agent', 'exec', PROMPT, '--json'], {
    cwd: join(home, 'work'),
    // Only what OpenClaw needs: none of the test runner's NODE_OPTIONS (its loader is for Node 20), no update check;
    // its log and lock files in TMPDIR go with the HOME. Node's compile cache beside the install rather than in that
    // TMPDIR, where it would be written afresh and thrown away each run: compiling OpenClaw is seconds of CPU.
    env: { PATH: process.env.PATH, HOME: home, TMPDIR: join(home, 'tmp'), LANG: 'C.UTF-8', OLLAMA_API_KEY: 'ollama-local', OPENCLAW_NO_AUTO_UPDATE: '1', OPENCLAW_NO_RESPAWN: '1', LLAMAGATE_TEST_MARK: mark, NODE_COMPILE_CACHE: join(dirname(openclaw), '../../.compile-cache') },
  })
  t.teardown(async () => { for (const pid of await processesWithMark(mark)) { try { process.kill(pid, 'SIGKILL') } catch {} } })
  t.equal(result.code, 0, `exit 0 (stderr: ${result.stderr.slice(-2000)})`)
  const outcome = JSON.parse(result.stdout) as { ok: boolean, status: string, final: string, provider: string, model: string, assistantTurns: number, toolSummary: { calls: number } }
  t.match(outcome, { ok: true, status: 'ok', provider: 'ollama', model: 'acme/agent', final: 'Done', assistantTurns: 2 }, 'a turn finished, through the Ollama provider')
  t.ok(outcome.toolSummary.calls >= 1, `after a tool round trip (${JSON.stringify(outcome.toolSummary)})`)
  const chats = answered.filter((a) => a.path === '/api/chat')
  t.equal(chats.length, 2, 'two requests: the tool call, then the answer')
  t.ok(chats.every((c) => c.status === 200 && c.type.startsWith('application/x-ndjson')), `each streamed as NDJSON: ${JSON.stringify(chats)}`)
  t.ok(asked.includes('/api/show'), `it asked the model to describe itself (/api/show): it asked ${JSON.stringify(asked)}`)
  t.same(await processesWithMark(mark), [], 'OpenClaw left no process behind')
})
