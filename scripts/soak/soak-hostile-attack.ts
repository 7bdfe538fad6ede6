import { attackWorkers, BLOBS_KEPT } from './soak-attackers.js'
import type { CacheWriter } from './soak-cache-writer.js'
import { HostileLedger, runAttackers } from './soak-hostile.js'
import { buildHostileSection, type BlobSample, type CpuMark, type HostileSection, type NormalRequest } from './soak-hostile-report.js'
import { UPSTREAM_LIMITS, UPSTREAM_PREFIX, type RunningUpstream } from './soak-hostile-upstream.js'
import type { AttackerKeys } from './soak-keys.js'
import { blobFolder, cpuSeconds, partialFiles, type ResourceSample } from './soak-probes.js'
import { DODGER_TOKENS_PER_DAY } from './soak-quota-dodger.js'
import { CHAT_MODELS, LONG_MODEL, PROMPT_CACHE, type SoakSettings } from './soak-settings.js'

// The hostile soak's attack as the run holds it: the CPU marks before and under it, its window, the attackers in
// the faults' place from the warm-up's end to the deadline, and the report's hostile section once the gateway exited.

export interface AttackOptions {
  base: string
  gatewayPid: number
  settings: SoakSettings
  /** The soak's own key, the attackers' two, the hostile upstream and the cache-folder writer. */
  opsKey: string
  keys: AttackerKeys
  upstream: RunningUpstream
  cacheWriter: CacheWriter
  modelsDir: string
  deadline: number
  since: () => number
  rand: () => number
}

export class HostileAttack {
  readonly ledger = new HostileLedger()
  /** While the attackers are at work (the normal clients go on past the deadline until they are done). */
  attacking = false
  /** CPU of the gateway and of the soak itself, before and under the attack: what the latencies are set against. */
  private readonly cpu: { baseline: CpuMark[], attack: CpuMark[] } = { baseline: [], attack: [] }
  private readonly window: { startS: number, deadlineS: number, endS: number }
  private disk: { blobsAtEnd: BlobSample, partialFilesAtEnd: string[] } | null = null

  constructor (private readonly o: AttackOptions) {
    this.window = { startS: 0, deadlineS: o.settings.durationMs / 1000, endS: 0 }
  }

  /** Attempts so far, of every kind. */
  attempts (): number { return Object.values(this.ledger.byKind).reduce((n, k) => n + k.attempts, 0) }

  /** Marks the CPU used so far by the gateway and by the soak: at the baseline's start and end. */
  async markBaseline (): Promise<void> { this.cpu.baseline.push(await this.cpuMark()) }

  private async cpuMark (): Promise<CpuMark> {
    return { t: this.o.since(), gateway: await cpuSeconds(this.o.gatewayPid), soak: process.cpuUsage().user / 1e6 + process.cpuUsage().system / 1e6 }
  }

  /** The attack, after the warm-up (whose requests are the normal clients' baseline) until the deadline. */
  async run (): Promise<void> {
    const { base, settings, keys, since } = this.o
    this.window.startS = since()
    // A warm-up whose quiet measure ran long (a busy machine) still leaves the attack half its planned length (the
    // normal clients go on while it lasts), rather than a deadline already past.
    const deadline = Math.max(this.o.deadline, Date.now() + (settings.durationMs - settings.warmupMs) / 2)
    this.window.deadlineS = since() + (deadline - Date.now()) / 1000
    this.attacking = true
    this.cpu.attack.push(await this.cpuMark())
    const workers = attackWorkers({
      base, port: Number(new URL(base).port), key: this.o.opsKey, chatModels: CHAT_MODELS, longModel: LONG_MODEL,
      relay: { key: keys.relay.secret, upstreamKey: this.o.upstream.key }, dodgerKey: keys.dodger.secret, cacheWriter: this.o.cacheWriter,
      bodyTimeoutMs: settings.hostileLimitMs, stallTimeoutMs: settings.hostileLimitMs, idleConnections: settings.idleConnections, deadline, rand: this.o.rand,
    })
    try {
      await runAttackers(workers, deadline, this.ledger, since)
    } finally {
      this.attacking = false
      this.window.endS = since()
      this.cpu.attack.push(await this.cpuMark())
    }
  }

  /** What the blob flood left in the models folder, read before the gateway stops. */
  async readDisk (): Promise<void> {
    this.disk = { blobsAtEnd: { t: this.o.since(), ...await blobFolder(this.o.modelsDir) }, partialFilesAtEnd: await partialFiles(this.o.modelsDir) }
  }

  /** The report's hostile section, once the gateway exited (its last saves and sweeps are at its exit). */
  async section (normal: NormalRequest[], samples: ResourceSample[], blobSamples: BlobSample[]): Promise<HostileSection> {
    // The cache writer's victims once more.
    this.ledger.add(await this.o.cacheWriter.afterExit(), this.o.since())
    const { settings } = this.o
    return buildHostileSection({
      ledger: this.ledger, normal, attack: this.window, samples, cpu: this.cpu, blobSamples, blobsAtEnd: this.disk!.blobsAtEnd, blobBound: BLOBS_KEPT + 1, partialFilesAtEnd: this.disk!.partialFilesAtEnd,
      settings: {
        body_timeout_s: settings.hostileLimitMs / 1000, stream_stall_timeout_s: settings.hostileLimitMs / 1000, idle_connections: settings.idleConnections, long_model: LONG_MODEL, api_keys: true,
        upstream: { model_prefix: UPSTREAM_PREFIX, limits: UPSTREAM_LIMITS }, dodger_tokens_per_day: DODGER_TOKENS_PER_DAY, prompt_cache: PROMPT_CACHE,
      },
    })
  }
}
