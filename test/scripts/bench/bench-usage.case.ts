import { join } from 'node:path'
import t from 'tap'
import { tempDir } from '../../helpers/app.js'
import { runBench } from '../../helpers/bench-run.js'

// `npm run bench -- --help` lists the scenarios and options; a mistyped option says so in a line, not a stack.

t.test('--help prints the scenarios and the options, and runs nothing', async (t) => {
  const { code, output } = await runBench(['--help'], join(await tempDir(t), 'none.yaml'))
  t.equal(code, 0)
  t.match(output, /^`npm run bench`: llamagate side by side with llama-server itself/)
  for (const option of ['--scenario', '--concurrency', '--parallel', '--mixed-shape', '--gateway-limits', '--plugin']) t.ok(output.includes(option), `names ${option}`)
  t.notMatch(output, /llama-server threads in every setup/, 'no setup was started')
})

t.test('an option it does not know: exit 2, the option named, where the list is', async (t) => {
  const { code, output } = await runBench(['--scenarios', 'mixed'], join(await tempDir(t), 'none.yaml'))
  t.equal(code, 2)
  t.match(output, /^bench: Unknown option '--scenarios'.*\(npm run bench -- --help lists the options\)\n$/)
  t.notMatch(output, /\n\s+at /, 'no stack trace')
})
