import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { closeSync, openSync, readFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import t from 'tap'
import { PACKAGE_ROOT } from '../../core/base/paths.js'
import { until } from '../helpers/until.js'

// The server's stdout (core/base/log-stream.ts), in a process of its own: a line logged while an earlier write is still
// under way (a reader that is slow, a full pipe) goes out once that write is done, not with the next line logged.
const LOG_STREAM = pathToFileURL(join(PACKAGE_ROOT, 'dist/core/base/log-stream.js')).href

t.test('a line logged during a write that waits on a full pipe is written right after it, not held until the next', async (t) => {
  // 1 MiB in one line fills the pipe (64 KiB) until the test reads; the short line comes a turn later, then nothing.
  const script = `const { batchedStdout } = await import(${JSON.stringify(LOG_STREAM)})
    const out = batchedStdout()
    out.write('x'.repeat(1 << 20) + '\\n')
    // The next turn, once the first line's write began; then it says so on stderr, and logs nothing more.
    setImmediate(() => { out.write('the last line\\n'); setImmediate(() => process.stderr.write('logged\\n')) })
    setInterval(() => {}, 1000)`
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] })
  t.teardown(() => { child.kill('SIGKILL') })
  child.stdout.pause()
  // Nothing is read until the child has logged both lines and its turn's flush came and went.
  let said = ''
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => { said += chunk })
  await until('the child logged', () => said.includes('logged'), 10_000)
  let text = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => { text += chunk })
  child.stdout.resume()
  await until('the last line', () => text.endsWith('the last line\n'), 5000)
  t.equal(text.length, (1 << 20) + 1 + 'the last line\n'.length, 'both lines, whole')
})

t.test('lines still gathered when the process exits are written', async (t) => {
  const script = `const { batchedStdout } = await import(${JSON.stringify(LOG_STREAM)})
    const out = batchedStdout()
    out.write('one\\n'); out.write('two\\n')
    process.exit(3)`
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] })
  let text = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => { text += chunk })
  const [code] = await once(child, 'close') as [number]
  t.equal(code, 3)
  t.equal(text, 'one\ntwo\n')
})

t.test('into a regular file the turn\'s lines are written on the spot; into a pipe, through libuv\'s threads', async (t) => {
  // Right after a flush, an asynchronous write is still a request in flight (FSReqCallback) until the turn ends.
  const script = `const { batchedStdout } = await import(${JSON.stringify(LOG_STREAM)})
    const out = batchedStdout()
    out.write('one\\n')
    out.flush()
    process.stderr.write(JSON.stringify({ pending: process.getActiveResourcesInfo().includes('FSReqCallback') }))`
  const run = async (stdout: 'pipe' | number): Promise<{ pending: boolean, text: string }> => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', stdout, 'pipe'] })
    let said = ''
    let text = ''
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => { said += chunk })
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => { text += chunk })
    const [code] = await once(child, 'close') as [number]
    t.equal(code, 0)
    return { ...JSON.parse(said) as { pending: boolean }, text }
  }
  const dir = await mkdtemp(join(tmpdir(), 'llamagate-log-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const file = join(dir, 'serve.log')
  const fd = openSync(file, 'w')
  try {
    t.same(await run(fd), { pending: false, text: '' }, 'a file: nothing left in flight after the flush')
  } finally {
    closeSync(fd)
  }
  t.equal(readFileSync(file, 'utf8'), 'one\n', 'the line is in the file')
  t.same(await run('pipe'), { pending: true, text: 'one\n' }, 'a pipe: the write goes through a thread, and arrives')
})
