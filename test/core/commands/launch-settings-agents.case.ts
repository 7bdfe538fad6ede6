import { chmod, mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { mergeRouterConfig } from '../../../core/cli/commands/agents/ccr.js'
import { AGENTS, type AgentWiring } from '../../../core/cli/commands/agents/index.js'
import { settingsFolder, writeSettings } from '../../../core/cli/commands/agents/settings-folder.js'
import { UsageError } from '../../../core/platform/usage-error.js'
import { tempDir } from '../../helpers/app.js'
import { importLongContextModel, serveTinyModels } from '../../helpers/inference.js'
import { runCli } from '../../helpers/serve-process.js'

// Cline, OpenClaw and Claude Code Router read their provider from settings files: Cline and OpenClaw from a private
// folder of launch's (a variable points them there), CCR from its one file in HOME, merged and put back. The agents
// themselves run in `npm run e2e:agents`; here the recipes' files, and launch with stand-ins on PATH.

const KEY = 'sk-settings-secret-0123456789'
const wiring: AgentWiring = { url: 'http://127.0.0.1:11435', key: KEY, model: 'acme/long', contextLength: 32_768, outputLimit: 8192 }

t.test('cline and openclaw: settings in a private folder (700, files 600); the key never in arguments', async (t) => {
  for (const name of ['cline', 'openclaw']) {
    const recipe = AGENTS[name]!
    const dir = await settingsFolder(name)
    t.teardown(() => rm(dir, { recursive: true, force: true }))
    const written = await writeSettings(recipe, wiring, dir)
    t.ok(written.length > 0, `${name} writes its settings`)
    t.equal((await stat(dir)).mode & 0o777, 0o700, `${name}: the folder is its owner's alone`)
    for (const [file] of written) t.equal((await stat(file)).mode & 0o777, 0o600, `${name}: ${file} is mode 600`)
    const args = [...recipe.args(wiring, dir), ...(recipe.defaultArgs ?? [])]
    t.notOk(args.join(' ').includes(KEY.slice(3, 20)), `${name}: no argument holds the key (${args.join(' ')})`)
    const env = recipe.env(wiring, dir)
    t.ok(Object.values(env).some((v) => v.includes(dir)), `${name}: a variable points it at the folder`)
  }
  const cline = JSON.parse((await writeSettingsOf('cline'))['providers.json']!)
  t.match(cline, {
    version: 1,
    lastUsedProvider: 'openai-compatible',
    providers: { 'openai-compatible': { settings: { provider: 'openai-compatible', model: 'acme/long', baseUrl: 'http://127.0.0.1:11435/v1', apiKey: KEY, contextWindow: 32_768, maxTokens: 8192 }, tokenSource: 'manual' } },
  }, 'Cline: its OpenAI Compatible provider, the key in the 600 file, the window and output limit')
  const openclaw = (await writeSettingsOf('openclaw'))['openclaw.json']!
  t.notOk(openclaw.includes(KEY), 'OpenClaw: the key stays out of its config')
  t.match(JSON.parse(openclaw), {
    models: { providers: { llamagate: { baseUrl: 'http://127.0.0.1:11435/v1', apiKey: '${LLAMAGATE_API_KEY}', api: 'openai-completions', models: [{ id: 'acme/long', contextWindow: 32_768, maxTokens: 8192 }] } } },
    agents: { defaults: { model: { primary: 'llamagate/acme/long', fallbacks: [] } } },
  }, 'OpenClaw: a chat-completions provider, the default model without fallbacks')
  t.match(AGENTS.openclaw!.env(wiring, '/tmp/x'), { LLAMAGATE_API_KEY: KEY, OPENCLAW_CONFIG_PATH: '/tmp/x/openclaw.json' })
})

async function writeSettingsOf (name: string): Promise<Record<string, string>> {
  return AGENTS[name]!.files!(wiring, '/tmp/unused')
}

t.test('ccr: the user\'s config kept, a llamagate provider added, every route on it, the key left in the environment', async (t) => {
  const theirs = JSON.stringify({ PORT: 3457, APIKEY: 'their-proxy-key', Providers: [{ name: 'deepseek', api_base_url: 'https://api.deepseek.com/chat/completions', api_key: 'sk-theirs', models: ['deepseek-chat'] }, { name: 'llamagate', api_base_url: 'http://old', models: ['old'] }], Router: { default: 'deepseek,deepseek-chat', longContextThreshold: 60000 } })
  const merged = JSON.parse(mergeRouterConfig(theirs, wiring))
  t.match(merged, { PORT: 3457, APIKEY: 'their-proxy-key', Router: { default: 'llamagate,acme/long', background: 'llamagate,acme/long', think: 'llamagate,acme/long', longContext: 'llamagate,acme/long', webSearch: 'llamagate,acme/long', image: 'llamagate,acme/long', longContextThreshold: 60000 } })
  t.same(merged.Providers.map((p: { name: string }) => p.name), ['deepseek', 'llamagate'], 'their providers kept, one llamagate')
  t.match(merged.Providers[1], { api_base_url: 'http://127.0.0.1:11435/v1/chat/completions', api_key: '$LLAMAGATE_API_KEY', models: ['acme/long'] })
  t.notOk(JSON.stringify(merged).includes(KEY), 'the key is not in the file')
  t.match(JSON.parse(mergeRouterConfig(undefined, wiring)), { Providers: [{ name: 'llamagate' }], APIKEY: '$LLAMAGATE_CCR_KEY' }, 'no config yet: one of its own, its proxy behind a key of the run\'s')
  t.throws(() => mergeRouterConfig('{ // mine\n}', wiring), UsageError, 'JSON5 with comments is not merged')
  t.match(AGENTS.ccr!.env(wiring, '/tmp/x'), { LLAMAGATE_API_KEY: KEY, CLAUDE_CODE_AUTO_COMPACT_WINDOW: '32768', CLAUDE_CODE_MAX_OUTPUT_TOKENS: '8192' })
  t.same(AGENTS.ccr!.args(wiring, '/tmp/x'), ['code'])
})

t.test('launch openclaw and ccr with stand-ins: their settings while they run, the user\'s as they were after', async (t) => {
  const { app, url } = await serveTinyModels(t, ['acme/tiny'])
  await importLongContextModel(t, app, 'acme/long', 32_768)
  const bin = await tempDir(t)
  const home = await tempDir(t)
  const tmp = await tempDir(t)
  const seen = join(bin, 'seen.txt')
  const env = { PATH: `${bin}:/usr/bin:/bin`, HOME: home, TMPDIR: tmp, LLAMAGATE_API_KEY: KEY }
  const standIn = async (name: string, script: string): Promise<void> => {
    await writeFile(join(bin, name), `#!/bin/sh\n${script}\n`)
    await chmod(join(bin, name), 0o755)
  }

  // OpenClaw: `openclaw chat` when given no arguments; the user's config included, from its folder.
  await mkdir(join(home, '.openclaw'))
  await writeFile(join(home, '.openclaw/openclaw.json'), '{ update: { checkOnStart: false } }\n')
  await standIn('openclaw', `{ echo "args: $*"; echo "roots: $OPENCLAW_INCLUDE_ROOTS"; cat "$OPENCLAW_CONFIG_PATH"; } > '${seen}'`)
  t.equal((await runCli(['launch', 'openclaw', '--model', 'acme/long', '--host', url], env)).code, 0)
  const [ocArgs, ocRoots, ...ocFile] = (await readFile(seen, 'utf8')).split('\n')
  t.equal(ocArgs, 'args: chat', 'its terminal UI on the embedded runtime')
  t.equal(ocRoots, `roots: ${join(home, '.openclaw')}`)
  t.match(JSON.parse(ocFile.join('\n')), { $include: join(home, '.openclaw/openclaw.json'), models: { providers: { llamagate: { baseUrl: `${url}/v1`, models: [{ contextWindow: 32_768 }] } } } }, 'the trained context from /api/show')
  t.equal(await readFile(join(home, '.openclaw/openclaw.json'), 'utf8'), '{ update: { checkOnStart: false } }\n', 'the user\'s config untouched')

  // CCR: `ccr code` with the merged config in place, then `ccr stop`; the user's config back as it was.
  const theirs = '{\n  "LOG": false\n}\n'
  await mkdir(join(home, '.claude-code-router'))
  await writeFile(join(home, '.claude-code-router/config.json'), theirs, { mode: 0o644 })
  await standIn('ccr', `if [ "$1" = stop ]; then echo "stop" >> '${seen}'; exit 0; fi\n{ echo "args: $*"; echo "key: $LLAMAGATE_API_KEY"; stat -c %a "$HOME/.claude-code-router/config.json"; cat "$HOME/.claude-code-router/config.json"; } > '${seen}'\nexit 4`)
  t.equal((await runCli(['launch', 'ccr', '--model', 'acme/long', '--host', url, '--', '-p', 'hi'], env)).code, 4, 'the agent\'s exit code')
  const ccrSeen = (await readFile(seen, 'utf8')).split('\n')
  t.equal(ccrSeen[0], 'args: code -p hi')
  t.equal(ccrSeen[1], `key: ${KEY}`, 'the key in its environment')
  t.equal(ccrSeen[2], '600', 'the merged config is its owner\'s alone')
  t.equal(ccrSeen.at(-2), 'stop', 'ccr stop after Claude Code exits: the service it started goes')
  t.match(JSON.parse(ccrSeen.slice(3, -2).join('\n')), { LOG: false, Providers: [{ name: 'llamagate', api_base_url: `${url}/v1/chat/completions` }], Router: { default: 'llamagate,acme/long' } })
  t.equal(await readFile(join(home, '.claude-code-router/config.json'), 'utf8'), theirs, 'the user\'s config back')
  t.equal((await stat(join(home, '.claude-code-router/config.json'))).mode & 0o777, 0o644, 'with its mode')

  // A CCR service already running keeps its own config: launch says so and changes nothing.
  await writeFile(join(home, '.claude-code-router/.claude-code-router.pid'), String(process.pid))
  const busy = await runCli(['launch', 'ccr', '--model', 'acme/long', '--host', url], env)
  t.equal(busy.code, 2)
  t.match(busy.stderr, `a Claude Code Router service is running (pid ${process.pid})`)
  t.equal(await readFile(join(home, '.claude-code-router/config.json'), 'utf8'), theirs)
})
