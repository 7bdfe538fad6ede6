import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir, stat, writeFile } from 'node:fs/promises'
import { createServer } from 'node:net'
import { join } from 'node:path'
import t from 'tap'
import { createSocketDir } from '../../../runtimes/process/socket-dir.js'
import { tempDir } from '../../helpers/app.js'
import { childEnv } from '../../helpers/child-env.js'

// The pid of a process that has exited.
const deadPid = (): number => spawnSync(process.execPath, ['-e', '0'], { env: childEnv() }).pid!

t.test('a private folder named after this process; orphans of dead gateways removed, live ones kept', async (t) => {
  const base = await tempDir(t)
  const orphan = join(base, `llamagate-sockets-${deadPid()}-abc`)
  await mkdir(orphan)
  await writeFile(join(orphan, '1.sock'), '') // a socket file nobody listens on any more
  const answering = join(base, `llamagate-sockets-${deadPid()}-def`)
  await mkdir(answering)
  const server = createServer().listen(join(answering, '1.sock'))
  await new Promise((r) => server.once('listening', r))
  t.teardown(() => server.close())
  const mine = join(base, `llamagate-sockets-${process.pid}-ghi`)
  await mkdir(mine)
  const unrelated = join(base, 'something-else-1')
  await mkdir(unrelated)

  const dir = await createSocketDir(base)
  t.match(dir, new RegExp(`llamagate-sockets-${process.pid}-`))
  t.equal((await stat(dir)).mode & 0o777, 0o700)
  t.notOk(existsSync(orphan), 'a dead gateway\'s folder whose sockets refuse is removed')
  t.ok(existsSync(answering), 'a folder whose socket still answers is kept (another pid namespace)')
  t.ok(existsSync(mine), 'this process\'s own folders are kept')
  t.ok(existsSync(unrelated), 'other folders are not touched')
})
