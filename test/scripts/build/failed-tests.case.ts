import { spawn } from 'node:child_process'
import { mkdir, utimes, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { PACKAGE_ROOT } from '../../../core/base/paths.js'
import { failuresOf } from '../../../scripts/build/failed-tests.js'
import { tempDir } from '../../helpers/app.js'
import { childEnv } from '../../helpers/child-env.js'

// What `npm test` prints last: the failed assertions of the run, so that a log cut to its tail still names them.

const SCRIPT = join(PACKAGE_ROOT, 'scripts/build/failed-tests.ts')

const TAP = `TAP version 14
# Subtest: the outer test
    # Subtest: an inner test
        ok 1 - fine
        not ok 2 - the numbers agree
          ---
          diff: |
            --- expected
            +++ actual
            -1
            +2
          at:
            fileName: test/x.case.ts
          ...
        1..2
    not ok 1 - an inner test # time=12.5ms
      ---
      at:
        fileName: test/x.case.ts
      ...
    ok 2 - a sibling that passed
    1..2
not ok 1 - the outer test # time=20ms
# Subtest: a test that threw
    not ok 1 - boom
    1..1
not ok 2 - a test that threw # time=3ms
ok 3 - a top-level pass
not ok 4 - a known gap # TODO not built yet
1..4
`

t.test('each failed assertion once, named by the subtests around it, with its diagnostics; failing parents not again', async (t) => {
  const failures = failuresOf('test/x.case.ts', TAP)
  t.same(failures.map((f) => f.path), [
    ['the outer test', 'an inner test', 'the numbers agree'],
    ['a test that threw', 'boom'],
  ])
  t.same(failures[0]!.diag.slice(0, 5), ['diff: |', '  --- expected', '  +++ actual', '  -1', '  +2'])
  t.same(failures[1]!.diag, [], 'no diagnostics: none shown')
  t.same(failuresOf('test/y.case.ts', 'TAP version 14\nok 1 - all good\n1..1\n'), [])
})

async function run (root: string, since: number): Promise<{ code: number | null, stderr: string }> {
  const child = spawn(process.execPath, [...process.execArgv, SCRIPT, root, '--since', String(since)], { env: childEnv(), stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (d) => { stderr += d })
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
  return { code, stderr }
}

t.test('the script lists this run\'s failures last; a result file from a run before is not read', async (t) => {
  const root = await tempDir(t)
  const dir = join(root, '.tap', 'test-results', 'test')
  await mkdir(dir, { recursive: true })
  await writeFile(join(dir, 'x.case.ts.tap'), TAP)
  await writeFile(join(dir, 'old.case.ts.tap'), 'TAP version 14\nnot ok 1 - stale failure\n1..1\n')
  const old = new Date(Date.now() - 3_600_000)
  await utimes(join(dir, 'old.case.ts.tap'), old, old)
  const { code, stderr } = await run(root, Date.now() - 60_000)
  t.equal(code, 0)
  t.match(stderr, /^\nthe 2 failed tests of this run:\n/)
  t.match(stderr, /\n {2}test\/x\.case\.ts\n {4}the outer test\n {6}an inner test\n {8}the numbers agree\n {6}\| diff: \|\n/)
  t.notMatch(stderr, /stale failure/)
  const quiet = await run(root, Date.now() + 60_000)
  t.equal(quiet.code, 0)
  t.equal(quiet.stderr, '', 'nothing failed since: nothing printed')
})
