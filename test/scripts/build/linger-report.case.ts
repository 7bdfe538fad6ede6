import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { PACKAGE_ROOT } from '../../../core/base/paths.js'
import { isAlive } from '../../../core/base/process-alive.js'
import { childEnv } from '../../helpers/child-env.js'

// A group's process that stays after its last test (a grandchild holding one of its pipes) fails at once, naming
// what holds it, instead of waiting out tap's 600 s for a file and saying only "timeout!".
t.test('a test process held open by an orphan fails, names the holder, and ends it', async (t) => {
  const fixture = join(PACKAGE_ROOT, 'test/fixtures/lingering-process.ts')
  const run = await promisify(execFile)(process.execPath, [...process.execArgv, fixture], { env: childEnv({ LINGER_MS: '300' }), cwd: PACKAGE_ROOT })
    .then(() => ({ code: 0, stdout: '' }), (err: { code: number, stdout: string }) => ({ code: err.code, stdout: err.stdout }))
  t.equal(run.code, 1, 'the process ended, and failed')
  t.match(run.stdout, /ok 1 - leaves a sleep holding a pipe/, 'its test passed')
  const sleep = /sleep (\d+) left behind/.exec(run.stdout)?.[1]
  t.ok(sleep, 'the test said which sleep it left')
  t.match(run.stdout, /not ok 2 - this process still ran 0\.3 s after its last test ended/, 'a failure of its own, saying why')
  t.match(run.stdout, new RegExp(`pipeHolders:\\s*\\n\\s*- ${sleep} sleep 600 \\(socket:\\[\\d+\\]'s peer\\)\\n`), 'the orphaned sleep named with the pipe it holds')
  t.match(run.stdout, /PipeWrap/, 'and Node\'s side of it')
  t.notOk(isAlive(Number(sleep)), 'the sleep is gone')
})
