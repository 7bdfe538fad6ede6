import { setTimeout as sleep } from 'node:timers/promises'
import type { BlobSample } from './soak-hostile-report.js'
import { blobFolder, closeConnections, countByComm, describeFds, http, markedProcesses, partialModels, psWithPrepared, resources, type ResourceSample } from './soak-probes.js'
import { round } from '../stats.js'

// The soak's watch on the gateway while the load runs: RSS and descriptors every second, its processes against
// /api/ps every 3 s, the models listed against the disk every 5 s; and, with every client parked, the gateway
// measured quiet (all models unloaded, no client connected), so that the start, after warm-up and the end compare.

/** A llama-server alive but missing from /api/ps this long is an orphan (starts and stops take well under). */
const ORPHAN_AFTER_MS = 15_000

export interface Quiet { at_s: number, rss_mib: number, fds: number, fd_kinds: Record<string, number>, processes: Record<string, number>, loaded_models: number }
/** `llamaServers`: those serving or loading; `prepared`: those prepared ahead (none of the room). */
export interface ProcessSample { t: number, counts: Record<string, number>, llamaServers: number, prepared: number, instances: number }

export interface MonitorOptions {
  base: string
  gatewayPid: number
  /** The mark of the gateway's environment, which every process it starts inherits. */
  mark: string
  modelsDir: string
  /** Samples the blob folder too (the blob flood's). */
  hostile: boolean
  /** What each port the gateway may hold a connection to is (the hub, the CDN, an upstream). */
  ports: Record<number, string>
  since: () => number
  say: (line: string) => void
}

export class Monitor {
  readonly samples: ResourceSample[] = []
  readonly processSamples: ProcessSample[] = []
  readonly blobSamples: BlobSample[] = []
  readonly orphans: string[] = []
  readonly partialListed: string[] = []
  partialChecks = 0
  readonly quiet: Record<string, Quiet> = {}
  private monitoring = true
  private paused = false
  private tick: Promise<void> = Promise.resolve()
  private loop: Promise<void> = Promise.resolve()
  /** llama-servers alive but not in /api/ps, since when. */
  private readonly extraSince = new Map<number, number>()

  constructor (private readonly o: MonitorOptions) {}

  async checkModels (when: string): Promise<void> {
    this.partialChecks++
    for (const problem of await partialModels(this.o.base, this.o.modelsDir)) {
      if (!this.partialListed.some((p) => p.endsWith(problem))) this.partialListed.push(`${when}: ${problem}`)
    }
  }

  /** All clients and faults parked: unload every model, let it settle, then measure. */
  async measureQuiet (label: string): Promise<Quiet> {
    // The monitor holds off meanwhile: its own requests would be client connections.
    this.paused = true
    await this.tick
    try {
      return await this.measureQuietNow(label)
    } finally {
      this.paused = false
    }
  }

  /** Whether the gateway runs a process now that it did not run idle at the start (any llama-server before that). */
  private async beyondStart (): Promise<boolean> {
    const counts = countByComm((await markedProcesses(this.o.mark)).filter((p) => p.pid !== this.o.gatewayPid))
    const start = this.quiet.start
    if (start === undefined) return (counts['llama-server'] ?? 0) > 0
    return Object.entries(counts).some(([comm, n]) => n > (start.processes[comm] ?? 0))
  }

  private async measureQuietNow (label: string): Promise<Quiet> {
    const { base, gatewayPid, since } = this.o
    // A stop ends a model's runtimes prepared ahead too (standing by after it was given up for another). A runtime
    // dropped from the list may still be exiting (its watchdog shell beside it), and one may stand by for a load that
    // ended meanwhile: stop what is listed until nothing is, and the gateway runs no process it did not run idle at the
    // start (15 s at most).
    let loaded = 0
    for (let i = 0; i < 150; i++) {
      const now = await psWithPrepared(base)
      loaded = now.models.length + now.prepared.length
      for (const name of new Set([...now.models, ...now.prepared].map((e) => e.name))) {
        await http(`${base}/api/stop`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: name }) })
      }
      if (loaded === 0 && !(await this.beyondStart())) break
      await sleep(100)
    }
    // No client connection open (the soak's pool closed), and the gateway's own to the hub allowed to lapse
    // (the soak's hub ends idle ones within a second): up to 10 s for the sockets to go.
    await closeConnections()
    let fdKinds: Record<string, number> = {}
    for (let i = 0; i < 100; i++) {
      await sleep(100)
      fdKinds = await describeFds(gatewayPid, Number(new URL(base).port), this.o.ports)
      if (!Object.keys(fdKinds).some((k) => k.startsWith('tcp ') && k !== 'tcp listening')) break
    }
    await sleep(500)
    const sample = await resources(gatewayPid, since())
    fdKinds = await describeFds(gatewayPid, Number(new URL(base).port), this.o.ports)
    const counts = countByComm((await markedProcesses(this.o.mark)).filter((p) => p.pid !== gatewayPid))
    await this.checkModels(label)
    const q = { at_s: Math.round(sample.t), rss_mib: round(sample.rssMiB), fds: sample.fds, fd_kinds: fdKinds, processes: counts, loaded_models: loaded }
    this.quiet[label] = q
    this.o.say(`quiet (${label}): RSS ${q.rss_mib} MiB, ${q.fds} fds ${JSON.stringify(fdKinds)}, processes besides the gateway ${JSON.stringify(counts)}, models loaded ${loaded}`)
    return q
  }

  /** Starts the watch; it runs until `stop`. */
  start (): void {
    this.loop = (async () => {
      for (let tick = 0; this.monitoring; tick++) {
        if (this.paused) { await sleep(200); continue }
        let done!: () => void
        this.tick = new Promise<void>((resolve) => { done = resolve })
        try {
          await this.watch(tick)
        } catch (err) {
          if (this.monitoring) this.o.say(`monitor: ${(err as Error).message}`)
        } finally {
          done()
        }
        await sleep(1000)
      }
    })()
  }

  async stop (): Promise<void> {
    this.monitoring = false
    await this.loop
  }

  private async watch (tick: number): Promise<void> {
    const { base, gatewayPid, mark, since } = this.o
    this.samples.push(await resources(gatewayPid, since()))
    if (this.o.hostile) this.blobSamples.push({ t: since(), ...await blobFolder(this.o.modelsDir) })
    if (tick % 3 === 0) {
      const procs = await markedProcesses(mark)
      const { models: instances, prepared } = await psWithPrepared(base)
      const servers = procs.filter((p) => p.comm === 'llama-server')
      // A runtime prepared ahead holds none of the room: counted apart from those serving or loading.
      const preparedPids = new Set(prepared.map((e) => e.pid).filter((p) => p !== null))
      const holding = servers.filter((s) => !preparedPids.has(s.pid)).length
      this.processSamples.push({ t: Math.round(since()), counts: countByComm(procs.filter((p) => p.pid !== gatewayPid)), llamaServers: holding, prepared: servers.length - holding, instances: instances.length })
      this.lookForOrphans(servers.map((s) => s.pid), new Set([...instances, ...prepared].map((e) => e.pid).filter((p) => p !== null)))
    }
    if (tick % 5 === 0) await this.checkModels(`at ${Math.round(since())} s`)
  }

  private lookForOrphans (servers: number[], listed: Set<number | null>): void {
    const now = Date.now()
    for (const pid of servers) {
      if (listed.has(pid)) { this.extraSince.delete(pid); continue }
      const first = this.extraSince.get(pid) ?? now
      this.extraSince.set(pid, first)
      if (now - first > ORPHAN_AFTER_MS && !this.orphans.some((o) => o.startsWith(`pid ${pid} `))) {
        this.orphans.push(`pid ${pid} (llama-server) alive for over ${ORPHAN_AFTER_MS / 1000} s without being in /api/ps (at ${Math.round(this.o.since())} s)`)
      }
    }
    for (const pid of this.extraSince.keys()) if (!servers.includes(pid)) this.extraSince.delete(pid)
  }
}
