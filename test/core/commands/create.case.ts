import { createHash } from 'node:crypto'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { resolveOptions } from '../../../core/config/request-options.js'
import { ollamaDetails } from '../../../plugins/models-api/tag-shape.js'
import { writeTinyGguf } from '../../../scripts/fixtures/tiny-model.js'
import { tempDir } from '../../helpers/app.js'
import { serveTinyModels, sharedServer } from '../../helpers/inference.js'
import { cpuRuntime } from '../../helpers/runtime.js'
import { runCli, runCliHere } from '../../helpers/serve-process.js'

// One gateway and llama-server for the tests that only send requests (a test with other settings has its own).
const tiny = sharedServer(() => serveTinyModels(t))

type Test = Parameters<typeof tempDir>[0]

/** A Modelfile in a folder of its own; returns its path. */
async function modelfile (t: Test, text: string): Promise<string> {
  const file = join(await tempDir(t), 'Modelfile')
  await writeFile(file, text)
  return file
}

async function show (url: string, model: string): Promise<Response> {
  return fetch(`${url}/api/show`, { method: 'POST', body: JSON.stringify({ model }) })
}

t.test('create FROM a local model with SYSTEM and PARAMETER: the statuses, then /api/show has them', async (t) => {
  const { url } = await tiny()
  const file = await modelfile(t, [
    '# a terse variant of the tiny model',
    'from acme/tiny',
    'SYSTEM """',
    'You are terse.',
    'Answer in one word.',
    '"""',
    'PARAMETER temperature 0.2',
    'PARAMETER num_ctx 512',
    'PARAMETER stop "<|end|>"',
    'PARAMETER stop </s>',
  ].join('\n'))
  const result = await runCli(['create', 'me/terse', '-f', file, '--host', url])
  t.equal(result.code, 0, result.stderr)
  t.equal(result.stderr, '')
  t.equal(result.stdout, 'using model acme/tiny\nwriting manifest for me/terse\nsuccess\ncreated me/terse\n')
  const shown = await (await show(url, 'me/terse')).json() as { system: string, parameters: string }
  t.equal(shown.system, 'You are terse.\nAnswer in one word.')
  t.match(shown.parameters, /^temperature\s+0\.2$/m)
  t.match(shown.parameters, /^num_ctx\s+512$/m, 'a number, not the text "512"')
  t.match(shown.parameters, /^stop\s+"<\|end\|>"$/m)
  t.match(shown.parameters, /^stop\s+"<\/s>"$/m, 'every PARAMETER stop, as one list')
})

t.test('create FROM ./file.gguf: hashed, uploaded (once), and made a model of', async (t) => {
  const { app, url } = await tiny()
  const file = await modelfile(t, 'FROM ./weights/tiny model.gguf\nSYSTEM Be brief.\n')
  const gguf = join(file, '..', 'weights', 'tiny model.gguf')
  await mkdir(join(file, '..', 'weights'))
  await writeTinyGguf({ file: gguf, seed: 7 })
  const sha256 = createHash('sha256').update(await readFile(gguf)).digest('hex')
  // Run from elsewhere: the path is the Modelfile's folder's, not the working directory's.
  const result = await runCli(['create', 'me/upload', '--file', file, '--host', url])
  t.equal(result.code, 0, result.stderr)
  t.match(result.stdout, /^hashing tiny model\.gguf \(\d+(\.\d+)? (KiB|MiB)\)\nuploading tiny model\.gguf \(\d+(\.\d+)? (KiB|MiB)\)\nusing uploaded files\n.*success\ncreated me\/upload\n$/s)
  const record = app.store.get('me/upload')
  t.equal(record.manifest.files[0]!.sha256, sha256, 'the model\'s file is the uploaded one')
  t.equal(record.manifest.files[0]!.name, 'tiny-model.gguf', 'under a name the server takes')
  t.equal(record.system, 'Be brief.')

  const again = await runCli(['create', 'me/upload2', '-f', file, '--host', url])
  t.equal(again.code, 0, again.stderr)
  t.match(again.stdout, /^hashing tiny model\.gguf .*\ntiny model\.gguf is on the server already\nusing uploaded files\n/, 'a blob the server has is not sent again')
  t.equal(app.store.get('me/upload2').manifest.files[0]!.sha256, sha256)
})

t.test('create --quantize q8_0: llama-quantize\'s progress, then a Q8_0 model', async (t) => {
  t.ok((await cpuRuntime()).quantizePath, 'the test runtime has llama-quantize')
  const { app, url } = await tiny()
  const file = await modelfile(t, 'FROM acme/tiny\nPARAMETER num_predict 3\n')
  const result = await runCli(['create', 'me/q8', '-f', file, '--quantize', 'q8_0', '--host', url])
  t.equal(result.code, 0, result.stderr)
  const lines = result.stdout.trimEnd().split('\n')
  t.equal(lines[0], 'quantizing q8_0')
  t.ok(lines.some((l) => /^quantizing q8_0 100% \((\d+)\/\1\)$/.test(l)), `progress to 100% (without a terminal, at each quarter):\n${result.stdout}`)
  t.ok(lines.filter((l) => l.startsWith('quantizing q8_0 ')).length <= 5, 'a short log, not a line per tensor')
  t.same(lines.slice(-2), ['success', 'created me/q8'])
  t.equal(ollamaDetails(app.store.get('me/q8')).quantization_level, 'Q8_0')
  const parameters = app.store.get('me/q8').parameters
  t.match(parameters, { num_predict: 3 }, 'the Modelfile\'s PARAMETER kept as written')
  t.equal(resolveOptions({ defaults: { max_tokens: 2048 }, parameters }).sampling.max_tokens, 3, 'and read as max_tokens')
})

t.test('a bad Modelfile: one line naming the file and the line, exit 1, nothing made', async (t) => {
  const { url } = await tiny()
  const cases: Array<[string, string, RegExp]> = [
    ['LICENSE', 'FROM acme/tiny\nPARAMETER temperature 0.1\nLICENSE MIT\n', /: line 3: LICENSE is not supported by llamagate create/],
    ['an unknown instruction', 'FROM acme/tiny\n\n# x\nSYTEM hi\n', /: line 4: unknown instruction "SYTEM"/],
    ['an unclosed """', 'FROM acme/tiny\nSYSTEM """\nhi\n', /: line 2: the """ that starts SYSTEM's value is never closed/],
    ['no FROM', 'SYSTEM hi\n', /: no FROM line/],
  ]
  for (const [what, text, message] of cases) {
    const file = await modelfile(t, text)
    const result = await runCliHere(['create', 'me/bad', '-f', file, '--host', url])
    t.equal(result.code, 1, `${what}: exit 1`)
    t.match(result.stderr, new RegExp(`^llamagate create: ${file}${message.source}.*\\n$`), `${what}: one line`)
    t.equal(result.stderr.split('\n').length, 2, `${what}: exactly one line`)
  }
  t.equal((await show(url, 'me/bad')).status, 404, 'nothing was made')
})

t.test('errors from the server and the disk: one line, exit 1; a wrong call, exit 2', async (t) => {
  const { url } = await tiny()
  const cli = async (text: string | null, ...args: string[]): Promise<Awaited<ReturnType<typeof runCliHere>>> => {
    const file = text === null ? join(await tempDir(t), 'Modelfile') : await modelfile(t, text)
    return runCliHere(['create', ...args, '-f', file, '--host', url])
  }
  const unknown = await cli('FROM acme/nope\n', 'me/x')
  t.equal(unknown.code, 1)
  t.equal(unknown.stderr, 'llamagate create: model "acme/nope" not found, pull it first\n', 'an unknown FROM model: the server\'s sentence')
  t.equal(unknown.stdout, '')

  const hot = await cli('FROM acme/tiny\nPARAMETER temperature hot\n', 'me/x')
  t.equal(hot.code, 1)
  t.match(hot.stderr, /^llamagate create: .*temperature.*\n$/, 'a value of the wrong type: the server refuses it by name')

  const typo = await cli('FROM acme/tiny\nPARAMETER temprature 0.5\n', 'me/typo')
  t.equal(typo.code, 0, typo.stderr)
  t.match(typo.stderr, /^llamagate create: warning: .* line 2: PARAMETER temprature is not an option llamagate knows/, 'an unknown option: made, with a warning')

  const missing = await cli(null, 'me/x')
  t.equal(missing.code, 1)
  t.match(missing.stderr, /^llamagate create: cannot read the Modelfile .*\/Modelfile: no such file\n$/)

  const noFile = await cli('FROM ./missing.gguf\n', 'me/x')
  t.equal(noFile.code, 1)
  t.match(noFile.stderr, /^llamagate create: .*Modelfile line 1: FROM \.\/missing\.gguf: no such file \(.*\/missing\.gguf\)\n$/)

  const badName = await cli('FROM acme/tiny\n', 'nope')
  t.equal(badName.code, 1)
  t.match(badName.stderr, /^llamagate create: invalid model name "nope"/)

  const noName = await runCliHere(['create', '--host', url])
  t.equal(noName.code, 2)
  t.match(noName.stderr, /^llamagate create: expected <owner>\/<name>\n\n.*usage: llamagate create/s)
  t.equal((await show(url, 'me/x')).status, 404, 'nothing was made')
})
