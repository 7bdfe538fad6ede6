import { readFile, readdir, rm, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { PassThrough } from 'node:stream'
import t from 'tap'
import { AGENTS, type AgentWiring } from '../../../core/cli/commands/agents/index.js'
import { printAgent } from '../../../core/cli/commands/agents/print-agent.js'
import { settingsFolder, writeSettings } from '../../../core/cli/commands/agents/settings-folder.js'
import { tempDir } from '../../helpers/app.js'

// Any local user reads another's command line (`ps`, /proc/<pid>/cmdline), not its environment. Every
// agent `llamagate launch` starts gets its key from the environment (or a file only its owner reads), never from its
// arguments; settings written for a run are private (folder 700, files 600).

const wiring: AgentWiring = { url: 'http://127.0.0.1:11435', key: 'sk-launch-secret-0123456789', model: 'acme/tiny', contextLength: 32_768, outputLimit: 8192 }
const mode = async (path: string): Promise<number> => (await stat(path)).mode & 0o777

t.test('every agent: the key is in its environment and nowhere in its arguments', async (t) => {
  t.ok(Object.keys(AGENTS).length >= 7, Object.keys(AGENTS).join(', '))
  for (const [name, recipe] of Object.entries(AGENTS)) {
    const args = recipe.args(wiring, '/tmp/llamagate-x')
    t.notOk(args.some((arg) => arg.includes(wiring.key)), `${name}: no argument holds the key (${args.join(' ')})`)
    // Not even a piece of it (a flag's value split, or a config value quoted into a TOML string).
    t.notOk(args.join(' ').includes(wiring.key.slice(3, 20)), `${name}: nor a part of it`)
    // Or a settings file of launch's private folder (mode 600), which its environment points it at.
    const carriers = [...Object.values(recipe.env(wiring, '/tmp/llamagate-x')), ...Object.values(recipe.files?.(wiring, '/tmp/llamagate-x') ?? {})]
    t.ok(carriers.some((value) => value.includes(wiring.key)), `${name}: its environment or private settings carry the key`)
  }
})

t.test('settings files: in a folder of mode 700, each of mode 600, and what the arguments name is there', async (t) => {
  const withFiles = Object.entries(AGENTS).filter(([, recipe]) => recipe.files !== undefined)
  t.ok(withFiles.length >= 1, withFiles.map(([name]) => name).join(', '))
  for (const [name, recipe] of withFiles) {
    const dir = await settingsFolder(name)
    t.teardown(() => rm(dir, { recursive: true, force: true }))
    const written = await writeSettings(recipe, wiring, dir)
    t.equal(await mode(dir), 0o700, `${name}: the folder`)
    for (const [file] of written) t.equal(await mode(file), 0o600, `${name}: ${file}`)
    for (const arg of recipe.args(wiring, dir).filter((a) => a.startsWith(dir))) t.ok(written.some(([file]) => file === arg), `${name}: ${arg} was written`)
  }
})

t.test('pi: its provider from an extension that names the key\'s variable, with the window and output limit', async (t) => {
  const dir = await tempDir(t)
  const [[file, content]] = await writeSettings(AGENTS.pi!, wiring, dir) as [[string, string]]
  t.notMatch(content, wiring.key, 'the key is not written')
  t.match(content, "apiKey\": \"LLAMAGATE_API_KEY\"")
  t.same(AGENTS.pi!.env(wiring, dir), { LLAMAGATE_API_KEY: wiring.key })
  t.same(AGENTS.pi!.args(wiring, dir), ['-e', file, '--provider', 'llamagate', '--model', 'acme/tiny'])
  // The extension is a module pi imports: load it as pi would, with a stand-in for its API.
  const registered: unknown[] = []
  const extension = await import(`${file}?${Date.now()}`) as { default: (pi: { registerProvider: (...a: unknown[]) => void }) => void }
  extension.default({ registerProvider: (...a) => registered.push(a) })
  t.match(registered, [['llamagate', { baseUrl: `${wiring.url}/v1`, api: 'openai-completions', models: [{ id: 'acme/tiny', contextWindow: 32_768, maxTokens: 8192 }] }]])
})

t.test('Kilo and Copilot CLI: their own variables, with the window and output limit', async (t) => {
  const kilo = JSON.parse(AGENTS.kilo!.env(wiring, '').KILO_CONFIG_CONTENT!) as unknown
  t.match(kilo, { model: 'llamagate/acme/tiny', provider: { llamagate: { npm: '@ai-sdk/openai-compatible', options: { baseURL: `${wiring.url}/v1` }, models: { 'acme/tiny': { limit: { context: 32_768, output: 8192 } } } } } })
  t.same(AGENTS.copilot!.env(wiring, ''), {
    COPILOT_PROVIDER_BASE_URL: `${wiring.url}/v1`,
    COPILOT_PROVIDER_TYPE: 'openai',
    COPILOT_PROVIDER_WIRE_API: 'completions',
    COPILOT_PROVIDER_API_KEY: wiring.key,
    COPILOT_MODEL: 'acme/tiny',
    COPILOT_PROVIDER_MAX_PROMPT_TOKENS: String(32_768 - 8192),
    COPILOT_PROVIDER_MAX_OUTPUT_TOKENS: '8192',
  })
  t.notOk('COPILOT_PROVIDER_MAX_PROMPT_TOKENS' in AGENTS.copilot!.env({ ...wiring, contextLength: null }, ''), 'no window known: none set')
})

t.test('--print: files written into a kept private folder, shown as comments; the variables point at them', async (t) => {
  const out = new PassThrough()
  let text = ''
  out.on('data', (d) => { text += d })
  await printAgent('pi', AGENTS.pi!, wiring, ['-p', 'hi there'], '/nonexistent-home', out)
  const dir = /^# settings written to (\S+) \(mode 600, kept/.exec(text)?.[1]
  t.ok(dir, text)
  t.teardown(() => rm(dir!, { recursive: true, force: true }))
  t.same(await readdir(dir!), ['llamagate.js'])
  t.equal(await mode(join(dir!, 'llamagate.js')), 0o600)
  t.match(text, 'export PI_OFFLINE=1\n')
  t.match(text, `export LLAMAGATE_API_KEY=${wiring.key}\n`)
  t.match(text, `\npi -e ${join(dir!, 'llamagate.js')} --provider llamagate --model acme/tiny -p 'hi there'\n`)
  const content = await readFile(join(dir!, 'llamagate.js'), 'utf8')
  t.ok(text.includes(content.split('\n').map((line) => `#   ${line}\n`).join('')), 'the file\'s content, shown whole')
})
