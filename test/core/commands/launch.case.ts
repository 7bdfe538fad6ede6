import { existsSync } from 'node:fs'
import { chmod, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { PassThrough } from 'node:stream'
import t from 'tap'
import { listAgents } from '../../../core/cli/commands/launch.js'
import { tempDir } from '../../helpers/app.js'
import { importLongContextModel, serveTinyModels } from '../../helpers/inference.js'
import { runCli } from '../../helpers/serve-process.js'

// `llamagate launch <agent>`: each agent wired to the server with its own documented settings. The agents
// themselves run against a real server in `npm run e2e:agents` (docs/e2e-agents.md); here a stand-in on PATH
// records what it was started with.

t.test('launch: --print for each agent; the agent started with that environment and arguments, its exit code kept', async (t) => {
  const { app, url } = await serveTinyModels(t, ['acme/tiny'])
  await importLongContextModel(t, app, 'acme/long', 32_768)
  const printed = async (agent: string, ...more: string[]): Promise<string> => {
    const res = await runCli(['launch', agent, '--model', 'acme/long', '--host', url, '--print', ...more])
    t.equal(res.code, 0, res.stderr)
    return res.stdout
  }
  const claude = await printed('claude')
  for (const line of [`export ANTHROPIC_BASE_URL=${url}`, 'export ANTHROPIC_AUTH_TOKEN=llamagate', 'export ANTHROPIC_MODEL=acme/long', 'export ANTHROPIC_DEFAULT_HAIKU_MODEL=acme/long', 'export CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1', 'export CLAUDE_CODE_ATTRIBUTION_HEADER=0', 'export CLAUDE_CODE_TOTAL_TOKENS_REMINDER=off']) t.match(claude, `${line}\n`)
  t.match(claude, /\nclaude\n$/)
  const codex = await printed('codex')
  t.match(codex, `-c 'model="acme/long"'`)
  t.match(codex, `-c 'model_providers.llamagate.base_url="${url}/v1"'`)
  t.match(codex, `-c 'model_providers.llamagate.wire_api="responses"' -m acme/long\n`, 'the only wire API Codex speaks')
  const opencode = await printed('opencode')
  const inline = JSON.parse(/^export OPENCODE_CONFIG_CONTENT='(.*)'$/m.exec(opencode)![1]!)
  t.match(inline, { model: 'llamagate/acme/long', provider: { llamagate: { npm: '@ai-sdk/openai-compatible', options: { baseURL: `${url}/v1` }, models: { 'acme/long': { limit: { context: 32_768 } } } } } }, 'opencode told the model\'s trained context')
  const qwen = await printed('qwen', '--', '-p', 'hi there')
  for (const line of ['export OPENAI_API_KEY=llamagate', `export OPENAI_BASE_URL=${url}/v1`, 'export OPENAI_MODEL=acme/long']) t.match(qwen, `${line}\n`)
  t.match(qwen, `\nqwen --auth-type openai -m acme/long -p 'hi there'\n`, 'arguments after -- go to the agent')
  t.match(await runCli(['launch', 'claude', '--host', url, '--print']), { code: 0, stdout: /ANTHROPIC_MODEL=acme\/(long|tiny)\n/ }, 'without --model: the most recent model')

  // A stand-in agent on PATH: what it was started with, and its exit code.
  const bin = await tempDir(t)
  const seen = join(bin, 'seen.txt')
  await writeFile(join(bin, 'claude'), `#!/bin/sh\n{ env | grep -E '^(ANTHROPIC|CLAUDE)_' | sort; echo "args: $*"; } > '${seen}'\nexit 3\n`)
  await chmod(join(bin, 'claude'), 0o755)
  const started = await runCli(['launch', 'claude', '--model', 'acme/tiny', '--host', url, '--', '-p', 'hello'], { PATH: `${bin}:${process.env.PATH}`, LLAMAGATE_API_KEY: 'sk-mine', CLAUDE_CODE_TOTAL_TOKENS_REMINDER: 'countdown' })
  t.equal(started.code, 3, 'the agent\'s exit code')
  const recorded = await readFile(seen, 'utf8')
  t.match(recorded, `ANTHROPIC_AUTH_TOKEN=sk-mine\n`, 'the client\'s key')
  t.match(recorded, `ANTHROPIC_BASE_URL=${url}\n`)
  t.match(recorded, 'CLAUDE_CODE_ATTRIBUTION_HEADER=0\n', 'its attribution line off')
  t.match(recorded, 'CLAUDE_CODE_TOTAL_TOKENS_REMINDER=countdown\n', 'a switch the user set stays as set')
  t.match(recorded, 'args: -p hello\n')

  // Every agent, started for real: the client's key reaches it through its environment, never its command line
  // (which any local user reads with ps).
  const agents = await tempDir(t)
  for (const agent of ['codex', 'opencode', 'qwen']) {
    await writeFile(join(agents, agent), `#!/bin/sh\n{ env | grep -c sk-mine-secret; echo "args: $*"; } > '${seen}'\n`)
    await chmod(join(agents, agent), 0o755)
    const run = await runCli(['launch', agent, '--model', 'acme/tiny', '--host', url], { PATH: `${agents}:${process.env.PATH}`, LLAMAGATE_API_KEY: 'sk-mine-secret' })
    t.equal(run.code, 0, run.stderr)
    const [count, args] = (await readFile(seen, 'utf8')).split('\n') as [string, string]
    t.ok(Number(count) >= 1, `${agent}: the key is in its environment`)
    t.notMatch(args, 'sk-mine-secret', `${agent}: and not in its arguments (${args})`)
  }

  // Settings written for the run: there (mode 600) while the agent runs, gone with their folder after.
  await writeFile(join(agents, 'pi'), `#!/bin/sh\n{ stat -c %a "$2"; dirname "$2"; echo "args: $*"; } > '${seen}'\n`)
  await chmod(join(agents, 'pi'), 0o755)
  const pi = await runCli(['launch', 'pi', '--model', 'acme/tiny', '--host', url], { PATH: `${agents}:${process.env.PATH}`, LLAMAGATE_API_KEY: 'sk-mine-secret' })
  t.equal(pi.code, 0, pi.stderr)
  const [fileMode, folder, piArgs] = (await readFile(seen, 'utf8')).split('\n') as [string, string, string]
  t.equal(fileMode, '600', 'pi\'s extension only its owner reads')
  t.match(piArgs, /^args: -e \S+\/llamagate\.js --provider llamagate --model acme\/tiny$/)
  t.notOk(existsSync(folder), 'the folder is gone after the run')

  const missing = await runCli(['launch', 'codex', '--model', 'acme/tiny', '--host', url], { PATH: bin })
  t.equal(missing.code, 127)
  t.match(missing.stderr, 'codex is not installed (or not on PATH): npm install -g @openai/codex')
  const unknown = await runCli(['launch', 'cursor', '--host', url])
  t.equal(unknown.code, 2)
  t.match(unknown.stderr, /unknown agent "cursor": one of ccr, claude, cline, codex, copilot, kilo, openclaw, opencode, pi, qwen/)
  const noModel = await runCli(['launch', 'claude', '--model', 'acme/none', '--host', url, '--print'])
  t.equal(noModel.code, 1)
  t.match(noModel.stderr, /model "acme\/none" not found/)
})

t.test('launch with no agent: each it knows, where it is on PATH or how to install it', async (t) => {
  const bin = await tempDir(t)
  await writeFile(join(bin, 'claude'), '#!/bin/sh\n')
  await chmod(join(bin, 'claude'), 0o755)
  const out = new PassThrough()
  let listed = ''
  out.on('data', (d) => { listed += d })
  await listAgents(out, `${bin}:/nonexistent`)
  t.match(listed, new RegExp(`\\n  claude +Claude Code +${join(bin, 'claude')}\\n`))
  t.match(listed, /\n {2}codex +Codex CLI +not on PATH: npm install -g @openai\/codex\n/)
  t.match(listed, /\n {2}copilot +GitHub Copilot CLI +not on PATH: npm install -g @github\/copilot\n/)
  t.match(listed, /\n {2}pi +pi +not on PATH: npm install -g @earendil-works\/pi-coding-agent\n/, 'pi under its current package name')
})
