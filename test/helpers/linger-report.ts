import { execFileSync } from 'node:child_process'
import { readdirSync, readFileSync, readlinkSync } from 'node:fs'
import t from 'tap'

/**
 * How long a group's process may still run once its last test has ended. Ending takes a few hundred milliseconds
 * (the shared llama-servers stop); tap's own limit for a file is 600 s, which says nothing of what held it.
 */
export const LINGER_MS = 60_000

/**
 * Watches the root test of this process: once every file has been imported and every test declared so far has ended,
 * a process still running LINGER_MS later fails with what holds it open (Node's active resources, and the processes
 * holding the other ends of its pipes, orphans included), ends those holders so the process can exit, and lets tap
 * report it. Call the returned function when every file has been imported.
 */
export function watchLinger (afterMs = LINGER_MS): () => void {
  let pending = 0
  let imported = false
  let timer: NodeJS.Timeout | undefined
  const arm = (): void => {
    clearTimeout(timer)
    if (imported && pending === 0) timer = setTimeout(() => { reportAndEnd(afterMs) }, afterMs).unref()
  }
  t.on('subtestAdd', () => { pending++; clearTimeout(timer) })
  t.on('subtestEnd', () => { pending--; arm() })
  return () => { imported = true; arm() }
}

function reportAndEnd (afterMs: number): void {
  const holders = pipeHolders()
  t.fail(`this process still ran ${afterMs / 1000} s after its last test ended`, {
    activeResources: process.getActiveResourcesInfo(),
    pipeHolders: holders.map(({ pid, command, pipes }) => `${pid} ${command} (${pipes.join(', ')})`),
    children: children(process.pid),
  })
  for (const { pid } of holders) {
    try {
      process.kill(pid, 'SIGKILL')
    } catch {
      // Gone meanwhile.
    }
  }
}

interface Holder { pid: number, command: string, pipes: string[] }

/**
 * Every other process that holds the far end of a pipe this process made for a child's stdio: a pipe (the same
 * `pipe:[inode]`) or, as libuv makes them, a socket pair (the peer's inode, which `ss` knows). Its own stdio
 * (descriptors 0-2) and whatever an ancestor also holds are the runner's, not a test's, and never named here.
 */
function pipeHolders (): Holder[] {
  const ancestors = new Set<number>()
  for (let pid = parentOf(process.pid); pid !== undefined && pid > 1; pid = parentOf(pid)) ancestors.add(pid)
  const inherited = new Set([...ancestors].flatMap((pid) => fdTargets(pid)))
  const ours = fdTargets(process.pid, 3).filter((target) => /^(pipe|socket):/.test(target) && !inherited.has(target))
  const held = new Map<number, Set<string>>()
  const hold = (pid: number, what: string): void => {
    if (pid !== process.pid && !ancestors.has(pid)) held.set(pid, (held.get(pid) ?? new Set()).add(what))
  }
  const pipes = new Set(ours.filter((target) => target.startsWith('pipe:')))
  for (const pid of pids()) for (const target of fdTargets(pid)) if (pipes.has(target)) hold(pid, target)
  const sockets = new Set(ours.filter((target) => target.startsWith('socket:')).map((target) => target.slice(8, -1)))
  for (const { peer, pids } of unixSockets()) if (sockets.has(peer)) for (const pid of pids) hold(pid, `socket:[${peer}]'s peer`)
  // The test loader's esbuild service: unreferenced, so it holds nothing open.
  return [...held].map(([pid, what]) => ({ pid, command: command(pid), pipes: [...what] })).filter(({ command }) => !/\/esbuild --service=/.test(command))
}

/** The connected Unix sockets, as `ss -xp` lists them: each one's peer inode and the processes holding it. */
function unixSockets (): Array<{ peer: string, pids: number[] }> {
  let listing: string
  try {
    listing = execFileSync('ss', ['-xpH'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 10_000 })
  } catch {
    return []
  }
  return listing.split('\n').map((line) => line.trim().split(/\s+/)).filter((fields) => fields.length >= 9).map((fields) => ({
    peer: fields[7]!,
    pids: [...fields.slice(8).join(' ').matchAll(/pid=(\d+)/g)].map((m) => Number(m[1])),
  }))
}

/** The processes whose parent is `pid`, with their commands. */
function children (pid: number): string[] {
  return pids().filter((child) => parentOf(child) === pid).map((child) => `${child} ${command(child)}`)
}

function pids (): number[] {
  return readdirSync('/proc').filter((name) => /^\d+$/.test(name)).map(Number)
}

/** What the descriptors of `pid` from `from` on point at (`pipe:[inode]`, `socket:[inode]`, a path). */
function fdTargets (pid: number, from = 0): string[] {
  try {
    return readdirSync(`/proc/${pid}/fd`).filter((fd) => Number(fd) >= from).map((fd) => {
      try {
        return readlinkSync(`/proc/${pid}/fd/${fd}`)
      } catch {
        return ''
      }
    })
  } catch {
    return []
  }
}

function parentOf (pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1')
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
  } catch {
    return undefined
  }
}

function command (pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'latin1').split('\0').join(' ').trim().slice(0, 200)
  } catch {
    return '?'
  }
}
