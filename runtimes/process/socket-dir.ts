import { mkdtemp, readdir, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { connect } from 'node:net'
import { join } from 'node:path'
import { isAlive } from '../../core/base/process-alive.js'

const PREFIX = 'llamagate-sockets-'

/**
 * A folder for the runtimes' Unix sockets: short (a socket address holds 107 bytes), private (mkdtemp makes
 * it 0700), named after this process. A gateway killed with SIGKILL cannot remove its folder; the next one
 * removes the folders of this user whose process is gone and in which no socket still answers (a gateway in
 * another pid namespace sharing /tmp looks dead from here, but its runtimes answer).
 */
export async function createSocketDir (base = tmpdir()): Promise<string> {
  await removeOrphans(base)
  return mkdtemp(join(base, `${PREFIX}${process.pid}-`))
}

async function removeOrphans (base: string): Promise<void> {
  const uid = process.getuid?.()
  for (const name of await readdir(base).catch(() => [] as string[])) {
    const pid = Number(new RegExp(`^${PREFIX}(\\d+)-`).exec(name)?.[1] ?? NaN)
    if (!Number.isInteger(pid) || pid === process.pid || isAlive(pid)) continue
    const path = join(base, name)
    const info = await stat(path).catch(() => null)
    if (!info?.isDirectory() || (uid !== undefined && info.uid !== uid)) continue
    const sockets = (await readdir(path).catch(() => [] as string[])).filter((f) => f.endsWith('.sock'))
    const answering = await Promise.all(sockets.map((f) => answers(join(path, f))))
    if (!answering.includes(true)) await rm(path, { recursive: true, force: true })
  }
}

function answers (socketPath: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ path: socketPath })
    const done = (result: boolean): void => { socket.destroy(); resolve(result) }
    socket.setTimeout(500, () => done(true)) // no refusal: something may be there
    socket.once('connect', () => done(true))
    socket.once('error', () => done(false))
  })
}
