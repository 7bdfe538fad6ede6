import { execFile } from 'node:child_process'
import { readdir } from 'node:fs/promises'
import { join, relative } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { PACKAGE_ROOT } from '../../../core/base/paths.js'
import { CASE_SUFFIX, caseFiles } from '../../helpers/cases.js'

// `npm test` runs every test the tree holds: each *.test.ts is a file tap lists (its default exclude drops any folder
// named fixtures, and test/scripts/fixtures holds tests), and each *.case.ts is in a folder whose cases.test.ts runs it.

/** The files under test/ whose names end in `suffix`, relative to the package, sorted. */
async function filesUnder (suffix: string): Promise<string[]> {
  const names = await readdir(join(PACKAGE_ROOT, 'test'), { recursive: true })
  return names.filter((name) => name.endsWith(suffix)).map((name) => join('test', name)).sort()
}

t.test('tap lists every *.test.ts under test/, and every *.case.ts has a group that runs it', async (t) => {
  const tests = await filesUnder('.test.ts')
  const { stdout } = await promisify(execFile)(process.execPath, [join(PACKAGE_ROOT, 'node_modules/.bin/tap'), 'list'], { cwd: PACKAGE_ROOT })
  const listed = stdout.trim().split('\n').map((line) => line.trim()).sort()
  t.ok(tests.length > 50, `${tests.length} test files`)
  t.same(listed, tests, 'tap runs exactly the test files there are')
  const cases = await filesUnder(CASE_SUFFIX)
  const grouped = new Set(tests.filter((f) => f.endsWith('/cases.test.ts')).flatMap((group) => caseFiles(join(PACKAGE_ROOT, group, '..')).map((f) => relative(PACKAGE_ROOT, f))))
  t.same(cases.filter((f) => !grouped.has(f)), [], 'no case file outside a group')
})
