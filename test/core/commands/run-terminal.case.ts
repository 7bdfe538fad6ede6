import t from 'tap'
import { post, serveRealisticModels } from '../../helpers/inference.js'
import { CLI } from '../../helpers/serve-process.js'
import { startTerminal, type Terminal } from '../../helpers/tmux.js'
import { until } from '../../helpers/until.js'

// The chat of `llamagate run` in a real terminal (tmux), typed into and read as a person would. The realistic tiny
// models answer gibberish, so what a question sent is checked through `/set verbose`'s prompt token count,
// against the count the API gives for the messages the chat should have sent.

// A context of 4096 (the fixtures' training context) makes an answer with ignore_eos run long enough to stop.
const { url } = await serveRealisticModels(t, { 'acme/qwen': 'qwen25', 'acme/r1': 'r1' }, { default_options: { num_ctx: 4096 } })

const FRESH_PROMPT = />>> Send a message \(\/\? for help\)\s*$/

interface Running { name: string, active_requests: number }
async function running (): Promise<Running[]> {
  return ((await (await fetch(`${url}/api/ps`)).json()) as { models: Running[] }).models
}

/** `llamagate run <args> --host <url>` in a terminal. */
async function startRun (t: Parameters<typeof startTerminal>[0], args: string[]): Promise<Terminal> {
  return startTerminal(t, [process.execPath, CLI, 'run', ...args, '--host', url])
}

function count (text: string, part: string): number {
  return text.split(part).length - 1
}

/**
 * Types `line` at the prompt (`>>> `, or `... ` inside a multi-line message) and waits for the next fresh prompt;
 * returns what was printed in between.
 */
async function enter (term: Terminal, line: string, prompt = '>>> '): Promise<string> {
  const echo = `${prompt.trimEnd()} ${line}\n`
  const before = count(await term.screen(), echo)
  await term.type(line)
  await term.keys('Enter')
  let screen = ''
  try {
    return await until(`"${line}" to be done`, async () => {
      screen = await term.screen()
      if (count(screen, echo) <= before) return null
      const after = screen.slice(screen.lastIndexOf(echo) + echo.length)
      return FRESH_PROMPT.test(after) ? after : null
    }, 60_000, 100)
  } catch (err) {
    throw new Error(`${(err as Error).message}\n--- the screen ---\n${screen}`)
  }
}

/** `--verbose`'s prompt token count in what an answer printed. */
function promptTokens (printed: string): number {
  const match = /prompt eval count: +(\d+) token\(s\)/.exec(printed)
  if (!match) throw new Error(`no prompt eval count in: ${printed}`)
  return Number(match[1])
}

/** The prompt token count the API gives for these messages. */
async function apiTokens (model: string, messages: Array<{ role: string, content: string }>): Promise<number> {
  const res = await post(`${url}/api/chat`, { model, messages, stream: false, options: { num_predict: 1 } })
  return ((await res.json()) as { prompt_eval_count: number }).prompt_eval_count
}

t.test('a chat: spinner, prompt, a conversation kept, slash commands, multi-line, history, /bye', async (t) => {
  const term = await startRun(t, ['acme/qwen', '--parameter', 'num_predict=1'])
  await term.waitFor(/[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] loading acme\/qwen/)
  const first = await term.waitFor(FRESH_PROMPT)
  t.notMatch(first, /loading/, 'the spinner is gone once the prompt shows')
  t.ok((await running()).some((m) => m.name === 'acme/qwen'), 'the model was loaded before any question')

  await term.keys('C-c')
  await term.waitFor(/>>>\nUse Ctrl \+ d or \/bye to exit\.\n>>> Send a message/)
  t.pass('Ctrl-C at an empty prompt only says how to leave')

  t.match(await enter(term, '/set verbose'), /^Set 'verbose' mode\./)
  const hello = await apiTokens('acme/qwen', [{ role: 'user', content: 'hello' }])
  const one = promptTokens(await enter(term, 'hello'))
  t.equal(one, hello, 'the first question is sent alone')
  const two = promptTokens(await enter(term, 'hello'))
  t.ok(two > one, `the second is sent after the first exchange (${two} > ${one} tokens)`)

  t.match(await enter(term, '/clear'), /^Cleared session context\n/)
  await term.keys('Up')
  await term.waitFor(/>>> \/clear\s*$/)
  await term.keys('Enter')
  await until('the recalled /clear to run', async () => count(await term.screen(), 'Cleared session context') === 2)
  await term.waitFor(FRESH_PROMPT)
  t.pass('Up recalls the previous line, and Enter runs it')
  t.equal(promptTokens(await enter(term, 'hello')), one, 'after /clear a question is sent alone again')

  await enter(term, '/clear')
  await term.type('"""')
  await term.keys('Enter')
  await term.waitFor(/>>> """\n\.\.\.\s*$/)
  await term.type('line one')
  await term.keys('Enter')
  await term.waitFor(/\.\.\. line one\n\.\.\.\s*$/)
  const multi = promptTokens(await enter(term, 'line two"""', '... '))
  t.equal(multi, await apiTokens('acme/qwen', [{ role: 'user', content: 'line one\nline two' }]), 'a """ message is its lines, joined')

  await enter(term, '/clear')
  t.match(await enter(term, '/set system You are a terse pirate.'), /^Set system message\./)
  const pirate = promptTokens(await enter(term, 'hello'))
  t.equal(pirate, await apiTokens('acme/qwen', [{ role: 'system', content: 'You are a terse pirate.' }, { role: 'user', content: 'hello' }]), 'the system message goes first')
  t.not(pirate, one, 'in place of the template\'s own')
  t.match(await enter(term, '/show system'), /^You are a terse pirate\.\n/)

  const info = await enter(term, '/show info')
  t.match(info, /Model\n\s+architecture\s+qwen2\n\s+parameters\s+\S+\n\s+context length\s+4096\n\s+embedding length\s+64\n\s+quantization\s+F16\n/, '/show info: the model')
  t.match(info, /Capabilities\n\s+completion\n\s+tools\n/, 'and its capabilities')

  t.match(await enter(term, '/set parameter colour red'), /^Couldn't set parameter: unknown parameter "colour"; known: temperature/)
  t.match(await enter(term, '/set parameter top_k many'), /^Couldn't set parameter: "many" is not a valid top_k: must be integer/)
  t.match(await enter(term, '/set parameter stop END FIN'), /^Set parameter 'stop' to 'END, FIN'/)
  t.match(await enter(term, '/set parameter num_predict'), /^Available Parameters:\n/, 'a parameter without a value: the list')
  t.match(await enter(term, '/show parameters'), /User defined parameters:\n\s+num_predict\s+1\n\s+stop\s+\["END","FIN"\]/)
  t.match(await enter(term, '/show template'), /<\|im_start\|>/, 'the chat template')

  await term.type('/set system """You are')
  await term.keys('Enter')
  await term.waitFor(/>>> \/set system """You are\n\.\.\.\s*$/)
  t.match(await enter(term, 'a pirate."""', '... '), /^Set system message\./)
  t.match(await enter(term, '/show system'), /^You are\na pirate\.\n/)

  // The server's refusal of a question is a line, and the chat goes on.
  t.match(await enter(term, '/set think'), /^Set 'think' mode\./)
  t.match(await enter(term, 'hello'), /^error: "acme\/qwen" does not support thinking\n/)
  t.match(await enter(term, '/set nothink'), /^Set 'nothink' mode\./)
  t.match(await enter(term, 'hello'), /prompt eval count/, 'answered again')
  t.match(await enter(term, '/set think deeply'), /^Unknown think level 'deeply'/)
  t.match(await enter(term, '/set format json'), /^Set format to 'json' mode\./)
  t.match(await enter(term, '/set noformat'), /^Disabled format\./)
  t.match(await enter(term, '/set quiet'), /^Set 'quiet' mode\./)
  t.notMatch(await enter(term, 'hello'), /eval count/, 'quiet: no statistics')

  t.match(await enter(term, '/nope'), /^Unknown command '\/nope'\. Type \/\? for help/)
  t.match(await enter(term, '/set colour'), /^Unknown command '\/set colour'\. Type \/\? for help/)
  t.match(await enter(term, '/show colour'), /^Unknown command '\/show colour'\. Type \/\? for help/)
  t.match(await enter(term, '/?'), /\/set +Set session variables[\s\S]*Use """ to begin a multi-line message\./)
  t.match(await enter(term, '/help set'), /\/set parameter \.\.\. +Set a parameter/)
  t.match(await enter(term, '/set'), /\/set parameter \.\.\. +Set a parameter/)
  t.match(await enter(term, '/? show'), /\/show info +Show details for this model/)
  t.match(await enter(term, '/show'), /\/show info +Show details for this model/)
  t.match(await enter(term, '/? shortcuts'), /Ctrl \+ c +Stop the model from responding/)

  await term.type('/bye')
  await term.keys('Enter')
  t.equal(await term.exited(), 0, '/bye exits 0')
})

t.test('an answer streams; Ctrl-C stops it and the chat goes on without it; Ctrl-D exits', async (t) => {
  const term = await startRun(t, ['acme/r1', '--verbose', '--parameter', 'num_predict=100000', '--parameter', 'ignore_eos=true'])
  await term.waitFor(FRESH_PROMPT)
  await term.type('why')
  await term.keys('Enter')
  const lines = async (): Promise<number> => {
    const screen = await term.screen()
    return count(screen.slice(screen.lastIndexOf('Thinking...')), '\n>')
  }
  await term.waitFor(/>>> why\nThinking\.\.\.\n/)
  const early = await until('thinking to show', lines)
  const later = await until('more thinking to show', async () => { const n = await lines(); return n > early ? n : null })
  t.ok(later > early, `the screen changes while the answer comes (${early}, then ${later} lines)`)
  t.equal((await running()).find((m) => m.name === 'acme/r1')?.active_requests, 1, 'the answer is still under way')

  await term.keys('C-c')
  await term.waitFor(FRESH_PROMPT)
  await until('the server to see the request end', async () => (await running()).every((m) => m.active_requests === 0), 10_000)
  t.notMatch(await term.screen(), /eval count/, 'the answer was cut, not finished (no statistics)')

  t.match(await enter(term, '/set parameter num_predict 3'), /^Set parameter 'num_predict' to '3'/)
  const next = await enter(term, 'second')
  t.match(next, /^Thinking\.\.\.\n/, 'the next question is answered')
  t.equal(promptTokens(next), await apiTokens('acme/r1', [{ role: 'user', content: 'second' }]), 'without the stopped exchange before it')

  await term.keys('C-d')
  t.equal(await term.exited(), 0, 'Ctrl-D exits 0')
})

t.test('a chat that asks a model which cannot think to think ends before it starts: one line, exit 1', async (t) => {
  const term = await startRun(t, ['acme/qwen', '--think=high'])
  t.equal(await term.exited(), 1)
  t.match(await term.screen(), /^llamagate run: "acme\/qwen" does not support thinking\n/)
})

t.test('afterwards nothing is left running on the server', async (t) => {
  t.same((await running()).filter((m) => m.active_requests > 0), [], 'no request in flight')
})
