import t from 'tap'
import { ModelfileError, parseModelfile, parameterValue } from '../../../core/cli/commands/modelfile.js'

function errorOf (text: string): ModelfileError {
  try {
    parseModelfile(text)
  } catch (err) {
    if (err instanceof ModelfileError) return err
    throw err
  }
  throw new Error(`parsed without an error:\n${text}`)
}

t.test('every supported instruction, in any case, with comments and blank lines around them', async (t) => {
  const parsed = parseModelfile([
    '# a comment before anything',
    '',
    'FROM acme/tiny',
    '   # an indented comment',
    'system You are terse.',
    'Parameter temperature 0.2',
    'PARAMETER num_ctx 4096',
    'PARAMETER ignore_eos true',
    'PARAMETER cache_type_k q8_0',
    'TEMPLATE {{ messages }}',
    '',
  ].join('\n'))
  t.same(parsed.from, { value: 'acme/tiny', line: 3 })
  t.equal(parsed.system, 'You are terse.')
  t.equal(parsed.template, '{{ messages }}')
  t.same(parsed.parameters, { temperature: 0.2, num_ctx: 4096, ignore_eos: true, cache_type_k: 'q8_0' }, 'numbers, booleans and strings as JSON values')
  t.same(parsed.parameterLines, { temperature: 6, num_ctx: 7, ignore_eos: 8, cache_type_k: 9 })
})

t.test('values: quoted on one line, """ over several lines (the lines only placing the quotes dropped), # kept inside', async (t) => {
  const parsed = parseModelfile([
    'FROM "./models/my model.gguf"',
    'SYSTEM """',
    'You are Mario.',
    '# not a comment: part of the prompt',
    '',
    '  Indented, kept as written.',
    '"""',
    'TEMPLATE """{% for m in messages %}{{ m.content }}{% endfor %}"""',
    'PARAMETER stop "<|im_end|>"',
    'PARAMETER stop """',
    'two',
    'lines"""',
    'PARAMETER stop </s>',
  ].join('\r\n'))
  t.equal(parsed.from.value, './models/my model.gguf')
  t.equal(parsed.system, 'You are Mario.\n# not a comment: part of the prompt\n\n  Indented, kept as written.')
  t.equal(parsed.template, '{% for m in messages %}{{ m.content }}{% endfor %}')
  t.same(parsed.parameters.stop, ['<|im_end|>', 'two\nlines', '</s>'], 'each PARAMETER stop adds to one list')
  t.equal(parsed.parameterLines.stop, 13)
})

t.test('a """ value that starts on the instruction\'s line and ends on another keeps both ends', async (t) => {
  const parsed = parseModelfile('FROM a/b\nSYSTEM """first line\nlast line"""\nPARAMETER top_k 5\n')
  t.equal(parsed.system, 'first line\nlast line')
  t.same(parsed.parameters, { top_k: 5 }, 'parsing goes on after the closing quotes')
})

t.test('a single " value may span lines too, as in Ollama; an empty SYSTEM clears the prompt', async (t) => {
  const parsed = parseModelfile('FROM a/b\nSYSTEM "one\ntwo"\n')
  t.equal(parsed.system, 'one\ntwo')
  t.equal(parseModelfile('FROM a/b\nSYSTEM ""\n').system, '')
})

t.test('the last SYSTEM, TEMPLATE and (other than stop) PARAMETER win, as in Ollama; a BOM is ignored', async (t) => {
  const parsed = parseModelfile('\uFEFFFROM a/b\nSYSTEM one\nSYSTEM two\nPARAMETER seed 1\nPARAMETER seed 2\n')
  t.equal(parsed.system, 'two')
  t.same(parsed.parameters, { seed: 2 })
  t.equal(parsed.parameterLines.seed, 5)
})

t.test('parameter values: numbers (signed, decimal, exponent), true/false, everything else text', async (t) => {
  t.equal(parameterValue('42'), 42)
  t.equal(parameterValue('-1'), -1)
  t.equal(parameterValue('0.75'), 0.75)
  t.equal(parameterValue('.5'), 0.5)
  t.equal(parameterValue('1e3'), 1000)
  t.equal(parameterValue('true'), true)
  t.equal(parameterValue('false'), false)
  t.equal(parameterValue('True'), 'True', 'booleans are lower case, as in JSON')
  t.equal(parameterValue('hot'), 'hot', 'a wrong type is passed on for the server to refuse by name')
  t.equal(parameterValue('0x10'), '0x10')
})

t.test('errors name the line', async (t) => {
  const cases: Array<[string, string, number | null, RegExp]> = [
    ['an unknown instruction', 'FROM a/b\n\nFORM c/d\n', 3, /^line 3: unknown instruction "FORM" \(expected FROM, PARAMETER, SYSTEM, TEMPLATE\)$/],
    ['LICENSE', 'FROM a/b\nLICENSE MIT\n', 2, /^line 2: LICENSE is not supported by llamagate create/],
    ['MESSAGE', '# c\nFROM a/b\nMESSAGE user hi\n', 3, /^line 3: MESSAGE is not supported/],
    ['ADAPTER (lower case)', 'adapter ./lora.gguf\nFROM a/b\n', 1, /^line 1: ADAPTER is not supported/],
    ['a line that is not an instruction', 'FROM a/b\n"""stray"""\n', 2, /^line 2: expected an instruction/],
    ['a PARAMETER without a value', 'FROM a/b\nPARAMETER temperature\n', 2, /^line 2: PARAMETER temperature needs a value$/],
    ['a PARAMETER without a name', 'FROM a/b\nPARAMETER\n', 2, /^line 2: PARAMETER needs a name and a value/],
    ['a FROM without a value', 'FROM\n', 1, /^line 1: FROM needs a value$/],
    ['a second FROM', 'FROM a/b\nSYSTEM x\nFROM c/d\n', 3, /^line 3: a second FROM \(the first is on line 1\)/],
    ['an unclosed """', 'FROM a/b\nPARAMETER top_k 1\nSYSTEM """\nnever closed\n', 3, /^line 3: the """ that starts SYSTEM's value is never closed$/],
    ['an unclosed "', 'FROM a/b\nTEMPLATE "open\n', 2, /^line 2: the " that starts TEMPLATE's value is never closed$/],
    ['no FROM at all', '# only\nSYSTEM hi\n', null, /^no FROM line/],
    ['an empty file', '', null, /^no FROM line/],
  ]
  for (const [what, text, line, message] of cases) {
    const err = errorOf(text)
    t.equal(err.line, line, `${what}: line ${line}`)
    t.match(err.message, message, `${what}: says what is wrong`)
  }
})

t.test('an instruction inside a """ value is text, not an instruction', async (t) => {
  const parsed = parseModelfile('FROM a/b\nSYSTEM """\nFROM c/d\nLICENSE x\n"""\n')
  t.equal(parsed.from.value, 'a/b')
  t.equal(parsed.system, 'FROM c/d\nLICENSE x')
})
