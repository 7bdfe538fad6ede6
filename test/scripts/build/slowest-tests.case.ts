import { spawn } from 'node:child_process'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { PACKAGE_ROOT } from '../../../core/base/paths.js'
import { tempDir } from '../../helpers/app.js'
import { childEnv } from '../../helpers/child-env.js'

// What `npm test` prints once tap is done: the ten slowest test files of the run, read from tap's records, and the ten
// slowest case files, read from what their groups wrote.

const SCRIPT = join(PACKAGE_ROOT, 'scripts/build/slowest-tests.ts')

async function slowest (root: string): Promise<{ code: number | null, stderr: string }> {
  const child = spawn(process.execPath, [...process.execArgv, SCRIPT, root], { env: childEnv(), stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (d) => { stderr += d })
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
  return { code, stderr }
}

t.test('the ten slowest test files, slowest first, with seconds; the processes the tests started are not files', async (t) => {
  const root = await tempDir(t)
  const dir = join(root, '.tap', 'processinfo')
  await mkdir(dir, { recursive: true })
  for (let i = 1; i <= 12; i++) {
    await writeFile(join(dir, `file-${i}.json`), JSON.stringify({ externalID: `test/t${i}.test.ts`, parent: null, runtime: i * 1000 + 300 }))
  }
  // A CLI a test ran (its parent is the test's process) and tap's own process (no file): neither is listed.
  await writeFile(join(dir, 'child.json'), JSON.stringify({ externalID: 'test/t1.test.ts', parent: 'file-1', runtime: 99_000 }))
  await writeFile(join(dir, 'runner.json'), JSON.stringify({ parent: null, runtime: 98_000 }))
  const { code, stderr } = await slowest(root)
  t.equal(code, 0)
  const lines = stderr.trim().split('\n')
  t.equal(lines[0], 'the 10 slowest test files (whole process, seconds):')
  t.same(lines.slice(1).map((l) => l.trim()), Array.from({ length: 10 }, (_, i) => `${12 - i}.3 s  test/t${12 - i}.test.ts`))
  t.notMatch(stderr, /case files/, 'no group wrote its cases: no second list')
})

t.test('the case files of this run\'s groups, slowest first; a group\'s record from a run before is not read', async (t) => {
  const root = await tempDir(t)
  const info = join(root, '.tap', 'processinfo')
  const times = join(root, '.tap', 'case-times')
  await mkdir(info, { recursive: true })
  await mkdir(times, { recursive: true })
  const start = Date.parse('2026-11-25T10:00:00.000Z')
  await writeFile(join(info, 'a.json'), JSON.stringify({ externalID: 'test/a/cases.test.ts', parent: null, runtime: 30_000, date: new Date(start).toISOString() }))
  await writeFile(join(info, 'b.json'), JSON.stringify({ externalID: 'test/b/cases.test.ts', parent: null, runtime: 20_000, date: new Date(start).toISOString() }))
  await writeFile(join(times, 'test_a_cases.test.ts.json'), JSON.stringify({ group: 'test/a/cases.test.ts', started: start + 900, files: { 'test/a/x.case.ts': 12.25, 'test/a/y.case.ts': 3 } }))
  // Written by a run before this one (its group started later this time), and by a group that did not run now.
  await writeFile(join(times, 'test_b_cases.test.ts.json'), JSON.stringify({ group: 'test/b/cases.test.ts', started: start - 60_000, files: { 'test/b/old.case.ts': 99 } }))
  await writeFile(join(times, 'test_c_cases.test.ts.json'), JSON.stringify({ group: 'test/c/cases.test.ts', started: start + 900, files: { 'test/c/gone.case.ts': 98 } }))
  const { code, stderr } = await slowest(root)
  t.equal(code, 0)
  const cases = stderr.trim().split('\n\n')[1] ?? ''
  t.same(cases.split('\n').map((l) => l.trim()), [
    'the 2 slowest case files (their tests in their group\'s process, seconds):',
    '12.3 s  test/a/x.case.ts',
    '3.0 s  test/a/y.case.ts',
  ])
})

t.test('CPU seconds per test file and per case file, with the run\'s total; a record from a run before is not read', async (t) => {
  const root = await tempDir(t)
  const info = join(root, '.tap', 'processinfo')
  const cpu = join(root, '.tap', 'cpu-times')
  const times = join(root, '.tap', 'case-times')
  for (const dir of [info, cpu, times]) await mkdir(dir, { recursive: true })
  const start = Date.parse('2026-11-25T10:00:00.000Z')
  await writeFile(join(info, 'a.json'), JSON.stringify({ externalID: 'test/a/cases.test.ts', parent: null, runtime: 30_000, date: new Date(start).toISOString() }))
  await writeFile(join(info, 'b.json'), JSON.stringify({ externalID: 'test/b.test.ts', parent: null, runtime: 20_000, date: new Date(start).toISOString() }))
  await writeFile(join(cpu, 'test_a_cases.test.ts.json'), JSON.stringify({ file: 'test/a/cases.test.ts', seconds: 41.5, ended: start + 30_000 }))
  // test/b's record ended before its process of this run started: it is a run before, and not listed.
  await writeFile(join(cpu, 'test_b.test.ts.json'), JSON.stringify({ file: 'test/b.test.ts', seconds: 99, ended: start - 1 }))
  await writeFile(join(times, 'test_a_cases.test.ts.json'), JSON.stringify({ group: 'test/a/cases.test.ts', started: start + 900, files: { 'test/a/x.case.ts': 12 }, cpu: { 'test/a/x.case.ts': 20.04 } }))
  const { code, stderr } = await slowest(root)
  t.equal(code, 0)
  const blocks = stderr.trim().split('\n\n')
  t.same(blocks[2]?.split('\n').map((l) => l.trim()), [
    'the 1 slowest test files by CPU (theirs and their children\'s, CPU seconds; 42 in all):',
    '41.5 s  test/a/cases.test.ts',
  ])
  t.same(blocks[3]?.split('\n').map((l) => l.trim()), ['the 1 slowest case files by CPU (CPU seconds):', '20.0 s  test/a/x.case.ts'])
})

t.test('no records (tap did not run): a line saying so, and exit 0, so that tap\'s code is what npm test ends with', async (t) => {
  const { code, stderr } = await slowest(await tempDir(t))
  t.equal(code, 0)
  t.match(stderr, /^slowest-tests: could not read tap's records: ENOENT/)
})
