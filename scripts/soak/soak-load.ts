import { setTimeout as sleep } from 'node:timers/promises'
import { OUTCOMES, pickRequest, runRequest, type RequestResult, type RequestSpec } from './soak-clients.js'
import { FAULT_KINDS, injectFault, type FaultContext, type FaultKind, type FaultRecord } from './soak-faults.js'
import { Gate } from './soak-gate.js'
import type { NormalRequest } from './soak-hostile-report.js'
import { clientKey, keyedRequest, KeyTally, RETRY_CAP_MS, type KeyName, type SoakKeys } from './soak-keys.js'
import { Ledger } from './soak-ledger.js'
import type { ResourceSample } from './soak-probes.js'
import { CHAT_MODELS, type SoakSettings } from './soak-settings.js'
import { round } from '../stats.js'

// The soak's load: its clients, each sending one request after another under its key, and (the plain soak) its
// faults one after another in a fixed rotation; every request counted in the ledger and in its key's tally, and
// every worker parked at the gate while the gateway is measured quiet.

/** How long past the soak's deadline the load may go on for the faults' first rotation or the attackers. */
const OVERTIME_MS = 300_000
/** A fault that has not ended by then failed. */
const FAULT_LIMIT_MS = 300_000

export interface LoadOptions {
  base: string
  settings: SoakSettings
  keys: SoakKeys
  /** When the load is due to end (ms since the epoch). */
  deadline: number
  since: () => number
  rand: () => number
  /** Whether the hostile clients still attack: the clients go on past the deadline until they are done. */
  attacking: () => boolean
  say: (line: string) => void
}

export class SoakLoad {
  readonly ledger = new Ledger()
  readonly tally = new KeyTally()
  /** The normal clients' requests of a hostile soak, for their latencies before and under the attack. */
  readonly normal: NormalRequest[] = []
  readonly faults: FaultRecord[] = []
  /** Every client, and the fault rotation, pass it before each request or fault. */
  readonly gate: Gate
  private sent = 0
  private faultsDone: boolean

  constructor (private readonly o: LoadOptions) {
    this.gate = new Gate(o.settings.concurrency + (o.settings.hostile ? 0 : 1))
    this.faultsDone = o.settings.hostile
  }

  /** Sends a request and counts it: `by` is who sent it (`client`, `fault`). */
  async record (spec: RequestSpec, by: string): Promise<RequestResult> {
    const { base, settings, since, rand } = this.o
    const startS = since()
    const result = await runRequest(base, spec, Math.floor(rand() * 2 ** 31), settings.timeoutMs)
    this.ledger.add(spec, result, by)
    this.tally.add(spec, result)
    // Answered: a whole answer, a leaver's leaving, or the refusal its key expects (chat's 403, batch's 429).
    const answered = result.outcome === 'finished' || result.outcome === 'client_aborted' || (spec.expect?.includes(result.outcome) ?? false)
    if (settings.hostile && by === 'client') this.normal.push({ startS, outcome: result.outcome, ms: result.ms, reason: result.reason, answered })
    return result
  }

  /**
   * Past the deadline the clients go on only while the faults' first rotation is unfinished, or the attackers'
   * last attempts (and never more than 5 minutes past it): faults and attacks happen under load.
   */
  private clientsGo (): boolean {
    const { deadline } = this.o
    return this.sent < this.o.settings.maxRequests && (Date.now() < deadline || ((!this.faultsDone || this.o.attacking()) && Date.now() < deadline + OVERTIME_MS))
  }

  /** Starts the clients; each promise ends with its client. */
  clients (): Array<Promise<void>> {
    const { keys, rand } = this.o
    return Array.from({ length: this.o.settings.concurrency }, async (_, index) => {
      const key: KeyName = clientKey(index, keys)
      this.tally.clients[key]++
      try {
        for (let n = 0; ; n++) {
          await this.gate.pass()
          if (!this.clientsGo()) break
          this.sent++
          const spec = pickRequest(rand, CHAT_MODELS)
          const result = await this.record(keyedRequest(spec, key, n, keys), 'client')
          // Told to come back later: it does, though no later than RETRY_CAP_MS, so that the limits keep being met.
          if (result.outcome === 'limited') await sleep(Math.min(RETRY_CAP_MS, (result.retryAfterS ?? 1) * 1000))
        }
      } finally {
        this.gate.leave()
      }
    })
  }

  /**
   * Starts the faults (none in a hostile soak: null), one after another, a pause between them, in a fixed rotation:
   * every kind at least once, also on a short run (the rotation is finished past the deadline if need be; the clients
   * keep going meanwhile). After each, `checkModels`.
   */
  async faultRotation (ctx: Omit<FaultContext, 'request'>, checkModels: (when: string) => Promise<void>): Promise<void> {
    if (this.o.settings.hostile) return
    const { deadline, since, say } = this.o
    const faultCtx: FaultContext = { ...ctx, request: (spec) => this.record(spec, 'fault') }
    const injected = (): boolean => FAULT_KINDS.every((k) => this.faults.some((f) => f.kind === k))
    try {
      for (let i = 0; ; i++) {
        await this.gate.pass()
        if (Date.now() >= deadline && (injected() || Date.now() >= deadline + OVERTIME_MS)) break
        const kind: FaultKind = FAULT_KINDS[i % FAULT_KINDS.length]!
        const at = since()
        const t0 = performance.now()
        const entry = { ...await this.inject(kind, faultCtx), at_s: Math.round(at * 10) / 10, ms: Math.round(performance.now() - t0) }
        this.faults.push(entry)
        say(`${String(Math.round(at)).padStart(5)} s  fault ${kind}: ${entry.as_expected ? 'ok' : 'UNEXPECTED'} (${entry.ms} ms): ${entry.detail}`)
        await checkModels(`after ${kind}`)
        await sleep(this.o.settings.pauseMs)
      }
    } finally {
      this.faultsDone = true
      this.gate.leave()
    }
  }

  /** One fault, given at most 5 minutes; one that throws is unexpected. */
  private async inject (kind: FaultKind, ctx: FaultContext): Promise<Omit<FaultRecord, 'at_s' | 'ms'>> {
    try {
      let timer: NodeJS.Timeout | undefined
      const limit = new Promise<never>((_resolve, reject) => { timer = setTimeout(() => reject(new Error('the fault did not end within 5 minutes')), FAULT_LIMIT_MS) })
      return await Promise.race([injectFault(kind, ctx), limit]).finally(() => clearTimeout(timer))
    } catch (err) {
      return { kind, as_expected: false, detail: `the fault itself failed: ${(err as Error).stack ?? String(err)}` }
    }
  }

  /** The line said every 30 s: the requests so far, the faults (or the attacks), the gateway's last RSS and fds. */
  progressLine (attacks: number | null, last: ResourceSample | undefined): string {
    const { ledger } = this
    return `${String(Math.round(this.o.since())).padStart(5)} s  requests ${ledger.total}: ${OUTCOMES.filter((o) => ledger.byOutcome[o] > 0).map((o) => `${o} ${ledger.byOutcome[o]}`).join(', ')}; ${attacks !== null ? `attacks ${attacks}` : `faults ${this.faults.length}`}; RSS ${round(last?.rssMiB ?? 0)} MiB, ${last?.fds ?? 0} fds`
  }
}
