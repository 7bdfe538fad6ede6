import { createHash } from 'node:crypto'
import { readdir, readFile, readlink, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { Agent, fetch as undiciFetch } from 'undici'

// What the soak reads from outside the gateway: /proc (its memory, its descriptors, the processes it left)
// and the models folder (is every listed model whole on disk?), and from its API (/api/ps, /api/tags).

/** The environment variable that marks the gateway and everything it starts (children inherit it). */
export const MARK_VAR = 'LLAMAGATE_SOAK_MARK'

// Every request of the soak goes through one connection pool, which the quiet measurements close: the
// gateway's descriptors are then counted with no client connection open, at the start as at the end.
// The pool lets an idle connection go after a second, under the hostile soak's header_timeout (2 s): Node answers
// 408 and closes a connection that has sent no whole request head for that long, and a request sent on it just
// then reads that 408 as its own answer (soak-attackers.ts sends such a request again).
const poolOptions = { connections: 64, keepAliveTimeout: 1_000, keepAliveMaxTimeout: 1_000 }
let agent = new Agent(poolOptions)
// API keys are on: every request of the soak's own (probes, faults, leavers) carries its key (the hostile soak's
// flat one, the plain soak's ops), unless it names another (soak-clients.ts, RequestSpec.key).
let authorization: Record<string, string> = {}

/** fetch through the soak's pool (with the API key, once `useApiKey` has set one). */
export function http (url: string, init: Parameters<typeof undiciFetch>[1] = {}): ReturnType<typeof undiciFetch> {
  return undiciFetch(url, { ...init, headers: { ...authorization, ...(init.headers as Record<string, string> | undefined) }, dispatcher: agent })
}

/** Sends `Authorization: Bearer <key>` with every request of `http` from now on. */
export function useApiKey (key: string): void {
  authorization = { authorization: `Bearer ${key}` }
}

/** Closes every connection of the pool (none may be in use); the next request opens a new one. */
export async function closeConnections (): Promise<void> {
  const old = agent
  agent = new Agent(poolOptions)
  await old.close()
}

export interface MarkedProcess { pid: number, comm: string, ppid: number }

/** Live (not zombie) processes whose environment carries `MARK_VAR=<mark>`. */
export async function markedProcesses (mark: string): Promise<MarkedProcess[]> {
  const needle = `${MARK_VAR}=${mark}\0`
  const found: MarkedProcess[] = []
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const environ = await readFile(`/proc/${entry}/environ`, 'latin1')
      if (!environ.includes(needle)) continue
      const stat = await readFile(`/proc/${entry}/stat`, 'latin1')
      const close = stat.lastIndexOf(')')
      const fields = stat.slice(close + 2).split(' ')
      // A zombie has exited already; it only waits for its parent to collect it.
      if (fields[0] === 'Z') continue
      found.push({ pid: Number(entry), comm: stat.slice(stat.indexOf('(') + 1, close), ppid: Number(fields[1]) })
    } catch {
      // Gone while we looked, or not ours to read.
    }
  }
  return found
}

/** Counts by command name: `{ 'llama-server': 2, sh: 3, cat: 2 }`. */
export function countByComm (processes: MarkedProcess[]): Record<string, number> {
  const counts: Record<string, number> = {}
  for (const p of processes) counts[p.comm] = (counts[p.comm] ?? 0) + 1
  return counts
}

export interface ResourceSample { t: number, rssMiB: number, fds: number }

/** The process's resident memory (VmRSS) and open descriptors (entries of /proc/<pid>/fd). */
export async function resources (pid: number, t: number): Promise<ResourceSample> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8')
  const rssKb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN)
  const fds = (await readdir(`/proc/${pid}/fd`)).length
  return { t, rssMiB: rssKb / 1024, fds }
}

/** CPU time the process has used so far, user and system, in seconds (Linux counts it in 1/100 s). */
export async function cpuSeconds (pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'latin1')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(fields[11]) + Number(fields[12])) / 100
}

export interface PsEntry { name: string, state: string, purpose: string, pid: number | null, active_requests: number, queued_requests: number }

export async function ps (base: string): Promise<PsEntry[]> {
  return (await psWithPrepared(base)).models
}

/** A runtime prepared ahead (none of the room: its load waits for room, or its model was given up for another). */
export interface PreparedEntry { name: string, pid: number | null, why: string }

/** /api/ps whole: the models, and the runtimes prepared ahead beside them. */
export async function psWithPrepared (base: string): Promise<{ models: PsEntry[], prepared: PreparedEntry[] }> {
  const res = await http(`${base}/api/ps`, { signal: AbortSignal.timeout(15_000) })
  if (res.status !== 200) throw new Error(`/api/ps answered ${res.status}`)
  const body = await res.json() as { models: PsEntry[], prepared?: PreparedEntry[] }
  return { models: body.models, prepared: body.prepared ?? [] }
}

/** `remote_host`: a model one of config.yaml's upstreams lists, not one on this disk. */
export interface TagEntry { name: string, size: number, format: string, remote_host?: string }

export async function tags (base: string): Promise<TagEntry[]> {
  const res = await http(`${base}/api/tags`, { signal: AbortSignal.timeout(15_000) })
  if (res.status !== 200) throw new Error(`/api/tags answered ${res.status}`)
  return ((await res.json()) as { models: TagEntry[] }).models
}

interface ManifestLike { files: Array<{ name: string, size: number, sha256: string | null }>, variants: Array<{ file: string, size: number, sha256: string | null }>, primary: string | null }

const sha256Of = async (file: string): Promise<string> => createHash('sha256').update(await readFile(file)).digest('hex')

/**
 * Every model /api/tags lists, checked on disk: its manifest is there, every file and converted variant it
 * names exists with the size (and SHA-256, when the manifest has one) it says, the listed size is their sum,
 * and nothing listed is a `.partial`. A model deleted between the listing and the look at the disk is asked
 * about again before it counts. Returns one sentence per model that is not whole.
 */
export async function partialModels (base: string, modelsDir: string): Promise<string[]> {
  const problems: string[] = []
  for (const tag of await tags(base)) {
    if (tag.remote_host !== undefined) continue
    const problem = await wholeOnDisk(tag, modelsDir)
    if (problem === null) continue
    // Deleted (or replaced) while we looked: only a model still listed, and still not whole, counts.
    const again = (await tags(base)).find((t) => t.name === tag.name)
    if (again === undefined) continue
    const still = await wholeOnDisk(again, modelsDir)
    if (still !== null) problems.push(`${tag.name}: ${still}`)
  }
  return problems
}

async function wholeOnDisk (tag: TagEntry, modelsDir: string): Promise<string | null> {
  if (tag.name.includes('.partial')) return 'a .partial name is listed'
  const [owner, name] = tag.name.split(':')[0]!.split('/')
  const dir = join(modelsDir, owner!, name!)
  let manifest: ManifestLike
  try {
    manifest = JSON.parse(await readFile(join(dir, 'manifest.json'), 'utf8')) as ManifestLike
  } catch (err) {
    return `listed without a readable manifest.json in ${dir} (${(err as Error).message})`
  }
  const named = [...manifest.files.map((f) => ({ name: f.name, size: f.size, sha256: f.sha256 })), ...manifest.variants.map((v) => ({ name: v.file, size: v.size, sha256: v.sha256 }))]
  if (manifest.primary !== null && !named.some((f) => f.name === manifest.primary)) return `its primary ${manifest.primary} is not among its files`
  let total = 0
  for (const file of named) {
    if (file.name.endsWith('.partial')) return `names a .partial file (${file.name})`
    const path = join(dir, file.name)
    let size: number
    try { size = (await stat(path)).size } catch { return `${file.name} is missing on disk` }
    if (size !== file.size) return `${file.name} is ${size} bytes on disk, the manifest says ${file.size}`
    if (file.sha256 !== null && await sha256Of(path) !== file.sha256) return `${file.name} does not match the SHA-256 of its manifest`
    total += size
  }
  if (tag.size !== total) return `listed with ${tag.size} bytes, its files hold ${total}`
  return null
}

/** `.partial` files anywhere under the models folder (a resumable download in progress or left for later). */
export async function partialFiles (modelsDir: string): Promise<string[]> {
  try {
    return (await readdir(modelsDir, { recursive: true })).filter((f) => f.endsWith('.partial'))
  } catch {
    return []
  }
}

/**
 * The state of the gateway's end of a client connection (`gatewayPort` on this side, `clientPort` on the other),
 * from the kernel's table: how a client that reads nothing learns that the gateway closed its connection (the
 * closing end leaves `established`; the client's own end shows nothing until it reads). Null when it is gone.
 */
export async function gatewaySideState (gatewayPort: number, clientPort: number): Promise<string | null> {
  for (const entry of (await tcpSockets('self')).values()) {
    if (entry.local === gatewayPort && entry.remote === clientPort) return entry.state
  }
  return null
}

const TCP_STATES: Record<string, string> = { '01': 'established', '02': 'syn-sent', '03': 'syn-recv', '04': 'fin-wait-1', '05': 'fin-wait-2', '06': 'time-wait', '07': 'close', '08': 'close-wait', '09': 'last-ack', '0A': 'listen', '0B': 'closing' }

/** TCP sockets of /proc/<pid>/net/tcp{,6} by inode: local and remote port, and whether it listens. */
async function tcpSockets (pid: number | 'self'): Promise<Map<string, { local: number, remote: number, listen: boolean, state: string }>> {
  const sockets = new Map<string, { local: number, remote: number, listen: boolean, state: string }>()
  for (const table of ['tcp', 'tcp6']) {
    let text: string
    try { text = await readFile(`/proc/${pid}/net/${table}`, 'utf8') } catch { continue }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/)
      if (f.length < 10) continue
      sockets.set(f[9]!, { local: parseInt(f[1]!.split(':')[1]!, 16), remote: parseInt(f[2]!.split(':')[1]!, 16), listen: f[3] === '0A', state: TCP_STATES[f[3]!] ?? f[3]! })
    }
  }
  return sockets
}

/**
 * The process's open descriptors by kind: files, pipes, event loops, Unix sockets (llama-server's), TCP
 * sockets by what is on the other end (`ports` names remote ports: the hub, the CDN), client connections
 * (to `ownPort`) and the listening socket.
 */
export async function describeFds (pid: number, ownPort: number, ports: Record<number, string>): Promise<Record<string, number>> {
  const tcp = await tcpSockets(pid)
  const counts: Record<string, number> = {}
  const add = (kind: string): void => { counts[kind] = (counts[kind] ?? 0) + 1 }
  for (const fd of await readdir(`/proc/${pid}/fd`)) {
    let target: string
    try { target = await readlink(`/proc/${pid}/fd/${fd}`) } catch { continue }
    const socket = /^socket:\[(\d+)\]$/.exec(target)
    if (socket) {
      const entry = tcp.get(socket[1]!)
      if (entry === undefined) add('unix socket')
      else if (entry.listen) add('tcp listening')
      else if (entry.local === ownPort) add(`tcp from a client (${entry.state})`)
      else add(`tcp to ${ports[entry.remote] ?? `port ${entry.remote}`} (${entry.state})`)
    } else if (target.startsWith('pipe:')) add('pipe')
    else if (target.startsWith('anon_inode:')) add(target.slice('anon_inode:'.length).replace(/^\[|\]$/g, ''))
    else if (target.startsWith('/dev/')) add(target)
    else add('file')
  }
  return counts
}

/** The uploaded blobs' folder (`<models>/.llamagate/blobs`): whole blobs, uploads under way, and their bytes. */
export async function blobFolder (modelsDir: string): Promise<{ files: number, partials: number, bytes: number }> {
  const dir = join(modelsDir, '.llamagate', 'blobs')
  const found = { files: 0, partials: 0, bytes: 0 }
  for (const name of await readdir(dir).catch(() => [] as string[])) {
    const size = (await stat(join(dir, name)).catch(() => null))?.size
    if (size === undefined) continue
    if (name.includes('.partial-')) found.partials++
    else found.files++
    found.bytes += size
  }
  return found
}

/** The slots and queue places /api/ps shows held, given up to 10 s to come back (0 as soon as none is). */
export async function heldSlots (base: string): Promise<number> {
  let held = 0
  for (let i = 0; i < 100; i++) {
    held = (await ps(base)).reduce((sum, e) => sum + e.active_requests + e.queued_requests, 0)
    if (held === 0) break
    await sleep(100)
  }
  return held
}
