import { spawn } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import { createServer } from 'node:net'
import { join } from 'node:path'
import t from 'tap'
import { AnswerPrinter } from '../../../core/cli/commands/answer-printer.js'
import { writeTinyGguf } from '../../../scripts/fixtures/tiny-model.js'
import { tempDir } from '../../helpers/app.js'
import { childEnv } from '../../helpers/child-env.js'
import { FakeHub } from '../../helpers/fake-hub.js'
import { post, serveRealisticModels } from '../../helpers/inference.js'
import { CLI } from '../../helpers/serve-process.js'
import { until } from '../../helpers/until.js'

// `llamagate run` without a terminal (prompts, pipes, scripts), the real binary against the real gateway with
// realistic tiny models. Their random weights answer gibberish, so the answers are compared with what the API
// itself answers to the same request at temperature 0, and prompts with the API's prompt token counts.

const hub = await FakeHub.start()
t.teardown(() => hub.close())
const { file: tiny } = await writeTinyGguf({ file: join(await tempDir(t), 'pulled.gguf'), seed: 7 })
hub.addRepo('acme/pulled-GGUF', { files: [{ path: 'pulled-Q4_K_M.gguf', content: await readFile(tiny) }] })

const { url } = await serveRealisticModels(t, {
  'acme/qwen': 'qwen25', 'acme/r1': 'r1', 'acme/bert': 'bert', 'acme/idle': 'qwen25', 'acme/loadme': 'qwen25',
}, { hub: { endpoint: hub.url, token: null } })

interface Result { code: number | null, stdout: string, stderr: string }

/** `llamagate run <args> --host <url>`, with `stdin` piped in when given (else stdin is /dev/null). */
async function run (args: string[], stdin?: string): Promise<Result> {
  const child = spawn(process.execPath, [CLI, 'run', ...args, '--host', url], {
    env: childEnv(), stdio: [stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
  })
  if (stdin !== undefined) child.stdin!.end(stdin)
  let stdout = ''
  let stderr = ''
  child.stdout!.on('data', (d) => { stdout += d })
  child.stderr!.on('data', (d) => { stderr += d })
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
  return { code, stdout, stderr }
}

interface ChatReply { message: { content: string, thinking?: string }, prompt_eval_count: number }

/** The API's own answer to one question, not streamed. */
async function ask (body: Record<string, unknown>): Promise<ChatReply> {
  const res = await post(`${url}/api/chat`, { stream: false, ...body })
  t.equal(res.status, 200, `the API answers ${JSON.stringify(body)}`)
  return await res.json() as ChatReply
}

/** `--verbose`'s prompt token count. */
function promptTokens (stderr: string): number {
  const match = /prompt eval count: +(\d+) token\(s\)/.exec(stderr)
  if (!match) throw new Error(`no prompt eval count in: ${stderr}`)
  return Number(match[1])
}

async function loaded (): Promise<Array<{ name: string, expires_at: string, active_requests: number }>> {
  return ((await (await fetch(`${url}/api/ps`)).json()) as { models: Array<{ name: string, expires_at: string, active_requests: number }> }).models
}

const GREEDY = ['--parameter', 'temperature=0', '--parameter', 'num_predict=12']
const GREEDY_OPTIONS = { temperature: 0, num_predict: 12 }

t.test('a prompt in arguments: the answer streamed to stdout, exactly as the API gives it, and exit 0', async (t) => {
  const result = await run(['acme/r1', 'hello', 'there', '--think=false', ...GREEDY, '--verbose'])
  t.equal(result.code, 0, result.stderr)
  const api = await ask({ model: 'acme/r1', messages: [{ role: 'user', content: 'hello there' }], think: false, options: GREEDY_OPTIONS })
  t.not(api.message.content, '', 'the model answers something')
  t.equal(result.stdout, api.message.content.endsWith('\n') ? api.message.content : `${api.message.content}\n`, 'the answer and a line end, nothing else')
  t.notMatch(result.stdout, /Thinking/, '--think=false: no thinking')
  t.not(result.stdout.trim(), '', 'the answer itself')
  t.equal(promptTokens(result.stderr), api.prompt_eval_count, 'the arguments were joined into one prompt, "hello there"')
  const one = await ask({ model: 'acme/r1', messages: [{ role: 'user', content: 'hello' }], think: false, options: GREEDY_OPTIONS })
  t.not(one.prompt_eval_count, api.prompt_eval_count, 'the count tells one word from two')
  t.match(result.stderr, /eval rate: +[\d.]+ tokens\/s/, '--verbose prints the timings on stderr')
})

t.test('a prompt on stdin, first, then the arguments after it', async (t) => {
  const piped = await run(['acme/qwen', '--verbose', '--parameter', 'num_predict=4'], 'summarize this text\n')
  t.equal(piped.code, 0, piped.stderr)
  const api = await ask({ model: 'acme/qwen', messages: [{ role: 'user', content: 'summarize this text\n' }], options: { num_predict: 1 } })
  t.equal(promptTokens(piped.stderr), api.prompt_eval_count, 'stdin alone is the prompt')
  t.not(piped.stdout, '', 'an answer')

  const both = await run(['acme/qwen', 'in French', '--verbose', '--parameter', 'num_predict=4'], 'summarize this text\n')
  t.equal(both.code, 0, both.stderr)
  const joined = await ask({ model: 'acme/qwen', messages: [{ role: 'user', content: 'summarize this text\n in French' }], options: { num_predict: 1 } })
  t.equal(promptTokens(both.stderr), joined.prompt_eval_count, 'stdin and the arguments make one prompt')
})

t.test('thinking: shown apart, under "Thinking...", and hidden by --hide-thinking', async (t) => {
  const api = await ask({ model: 'acme/r1', messages: [{ role: 'user', content: 'why' }], think: true, options: GREEDY_OPTIONS })
  const thinking = api.message.thinking ?? ''
  t.not(thinking, '', 'the r1 fixture thinks')
  t.equal(api.message.content, '', 'and, its weights being random, thinks through all 12 tokens')

  // Thinking is asked for by default, as Ollama does for a model with the capability.
  const shown = await run(['acme/r1', 'why', ...GREEDY])
  t.equal(shown.code, 0, shown.stderr)
  t.equal(shown.stdout, `Thinking...\n${thinking}${thinking.endsWith('\n') ? '' : '\n'}`, 'a header, then the thinking')
  t.notMatch(shown.stdout, /\x1b/, 'no escape codes into a pipe')

  const hidden = await run(['acme/r1', 'why', ...GREEDY, '--hide-thinking'])
  t.equal(hidden.code, 0, hidden.stderr)
  t.equal(hidden.stdout, '', 'nothing but the answer, which is empty')
  const ollamaSpelling = await run(['acme/r1', 'why', ...GREEDY, '--hidethinking'])
  t.equal(ollamaSpelling.stdout, '', 'Ollama\'s spelling of the flag too')

  // As Ollama's flag: alone it means true, and the next word stays part of the prompt.
  const bare = await run(['acme/r1', '--think', 'why', ...GREEDY])
  t.equal(bare.code, 0, bare.stderr)
  t.equal(bare.stdout, shown.stdout, '--think alone: thinking on, "why" the prompt')

  // --think=false is the first test's run: no thinking, the answer alone.
})

t.test('thinking, then the answer: the layout around them', async (t) => {
  // The r1 fixture, its weights random, never ends its thinking: here the printer gets the events themselves.
  const events = [
    { message: { content: '', thinking: 'Let me see.' } }, { message: { content: '', thinking: ' Yes.' } },
    { message: { content: 'Hello' } }, { message: { content: ' there.' } }, { message: { content: '' }, done: true },
  ]
  const print = (options: { hideThinking: boolean, color: boolean }, newlines: number): string => {
    let text = ''
    const printer = new AnswerPrinter({ write: (chunk: string) => { text += chunk; return true } } as unknown as NodeJS.WritableStream, options)
    for (const event of events) printer.push(event)
    printer.end(newlines)
    t.equal(printer.content, 'Hello there.', 'the answer, without the thinking')
    return text
  }
  t.equal(print({ hideThinking: false, color: false }, 1), 'Thinking...\nLet me see. Yes.\n...done thinking.\n\nHello there.\n', 'plain')
  t.equal(print({ hideThinking: false, color: true }, 2),
    '\x1b[1mThinking...\n\x1b[0m\x1b[38;5;245mLet me see. Yes.\n\x1b[1m...done thinking.\n\n\x1b[0mHello there.\n\n', 'on a terminal: bold headers, grey thinking, a blank line after')
  t.equal(print({ hideThinking: true, color: true }, 1), 'Hello there.\n', 'hidden')
})

t.test('--format: json, or a JSON schema, which reaches the model\'s grammar', async (t) => {
  const json = await run(['acme/qwen', 'hi', '--format', 'json', '--parameter', 'num_predict=8'])
  t.equal(json.code, 0, json.stderr)
  // llama-server compiles the schema into a grammar: a schema it cannot read is its error, one line.
  const schema = await run(['acme/qwen', 'hi', '--format', '{"type":"nonsense"}', '--parameter', 'num_predict=8'])
  t.equal(schema.code, 1)
  t.match(schema.stderr, /^llamagate run: .*unrecognized type nonsense\n$/)
})

t.test('a model that is not here is pulled first, its progress on stderr, then it answers', async (t) => {
  const result = await run(['acme/pulled-GGUF', 'hi', '--parameter', 'num_predict=4'])
  t.equal(result.code, 0, result.stderr)
  t.match(result.stderr, /pulled acme\/pulled-GGUF/, 'the pull\'s last line')
  t.notMatch(result.stdout, /pull/, 'stdout holds only the answer')
  t.not(result.stdout, '', 'an answer')
  const tags = (await (await fetch(`${url}/api/tags`)).json()) as { models: Array<{ name: string }> }
  t.ok(tags.models.some((m) => m.name === 'acme/pulled-GGUF'), 'the model is in the list now')
})

t.test('nothing to ask (an empty pipe): the model is loaded, with --keep-alive, and nothing printed', async (t) => {
  const result = await run(['acme/loadme', '--keep-alive', '7m'], '')
  t.equal(result.code, 0, result.stderr)
  t.equal(result.stdout, '')
  const model = (await loaded()).find((m) => m.name === 'acme/loadme')
  t.ok(model, 'loaded')
  const left = new Date(model!.expires_at).getTime() - Date.now()
  t.ok(left > 6 * 60_000 && left <= 7 * 60_000, `kept loaded for 7 minutes (${left} ms left)`)

  const once = await run(['acme/loadme', 'hi', '--keep-alive', '0', '--parameter', 'num_predict=2'])
  t.equal(once.code, 0, once.stderr)
  await until('keep-alive 0 to unload the model after its answer', async () => !(await loaded()).some((m) => m.name === 'acme/loadme'))
})

t.test('errors: one line on stderr and exit 1', async (t) => {
  const lineOf = (result: Result): string => {
    t.equal(result.code, 1, `exit 1: ${result.stderr}`)
    t.equal(result.stdout, '', 'nothing on stdout')
    const lines = result.stderr.trimEnd().split('\n')
    return lines.at(-1)!
  }
  const unknown = await run(['acme/missing-GGUF', 'hi'])
  t.match(lineOf(unknown), /^llamagate run: .*acme\/missing-GGUF/, 'a model the hub does not have either')
  t.notMatch(unknown.stderr, /\n\s+at /, 'no stack')

  const embedding = await run(['acme/bert', 'hi'])
  t.equal(embedding.stderr, 'llamagate run: "acme/bert" does not support chat or generate: it is an embedding model; use /api/embed or /v1/embeddings\n', 'an embedding model: the server\'s sentence')

  const think = await run(['acme/qwen', 'hi', '--think=high'])
  t.equal(think.stderr, 'llamagate run: "acme/qwen" does not support thinking\n')
  t.equal(think.code, 1)

  const invalid = await run(['no-owner', 'hi'])
  t.match(lineOf(invalid), /^llamagate run: invalid model name "no-owner"/)

  // A port that was just free, so nothing listens there.
  const port = await new Promise<number>((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })
  const child = spawn(process.execPath, [CLI, 'run', 'acme/qwen', 'hi', '--host', `127.0.0.1:${port}`], { env: childEnv(), stdio: ['ignore', 'pipe', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (d) => { stderr += d })
  const code = await new Promise((resolve) => child.once('exit', resolve))
  t.equal(code, 1)
  t.equal(stderr, `llamagate run: could not reach llamagate at http://127.0.0.1:${port} (connection refused). Is it running? Start it with: llamagate serve (or point at another with --host URL or LLAMAGATE_HOST)\n`)
})

t.test('bad flags: exit 2 with the usage, and nothing reaches the server', async (t) => {
  const cases: Array<[string[], RegExp]> = [
    [['acme/idle', 'hi', '--nope'], /^llamagate run: Unknown option '--nope'/],
    [['acme/idle', 'hi', '--think=maybe'], /^llamagate run: --think "maybe": use true, false, low, medium, high or max/],
    [['acme/idle', 'hi', '--parameter', 'temperature=-1'], /^llamagate run: --parameter temperature=-1: "-1" is not a valid temperature: must be >= 0/],
    [['acme/idle', 'hi', '--parameter', 'colour=red'], /^llamagate run: --parameter colour=red: unknown parameter "colour"; known: temperature, /],
    [['acme/idle', 'hi', '--parameter', 'num_predict'], /^llamagate run: --parameter "num_predict": expected NAME=VALUE/],
    [['acme/idle', 'hi', '--keep-alive', 'soon'], /^llamagate run: --keep-alive "soon" is not a duration/],
    [['acme/idle', 'hi', '--format', 'xml'], /^llamagate run: --format "xml": use json, or a JSON schema/],
    [[], /^llamagate run: expected <model> \[prompt\.\.\.\]/],
  ]
  for (const [args, message] of cases) {
    const result = await run(args)
    t.equal(result.code, 2, `${args.join(' ')}: exit 2`)
    t.match(result.stderr, message, args.join(' '))
    t.match(result.stderr, /usage: llamagate run <model> \[prompt\.\.\.\]/, 'with the usage')
    t.equal(result.stdout, '')
  }
  t.notOk((await loaded()).some((m) => m.name === 'acme/idle'), 'the model was never loaded')
})

t.test('afterwards nothing is left running on the server', async (t) => {
  t.same((await loaded()).filter((m) => m.active_requests > 0), [], 'no request in flight')
})
