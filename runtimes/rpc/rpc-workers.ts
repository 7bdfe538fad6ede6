import { lookup } from 'node:dns/promises'
import { UnavailableError } from '../../core/base/errors.js'
import { addressKind, formatHostPort, type HostPort } from '../../core/base/host-port.js'
import { probeRpcWorker, type RpcDeviceMemory, type RpcProbe } from './rpc-probe.js'

/** config.yaml's `rpc.workers[]`. */
export interface RpcWorkerConfig { name: string, endpoint: HostPort, allowPublic: boolean }

export type RpcWorkerState = RpcProbe['state'] | 'in_use' | 'refused'

/** What GET /api/rpc-workers says of one worker. */
export interface RpcWorkerStatus {
  name: string
  endpoint: string
  state: RpcWorkerState
  /** The RPC protocol version it speaks, once it has answered. */
  version: string | null
  /** Its devices as last seen, with their memory. */
  devices: RpcDeviceMemory[]
  /** When the devices were last read (ISO 8601); null before. */
  checkedAt: string | null
  /** Why it is not ready; null when it is. */
  error: string | null
  /** The models loaded across it now. */
  usedBy: string[]
}

const PROBE_TIMEOUT_MS = 2000
/** After a crash, how long to wait for a worker before saying it is gone: the error event waits for this. */
const LOSS_PROBE_TIMEOUT_MS = 500

/**
 * The RPC workers of config.yaml: whether each answers and what memory it has. A worker serves one client at
 * a time, so one that a loaded model uses is not asked (the question would wait behind llama-server): its last
 * answer is shown instead.
 */
export class RpcWorkers {
  private readonly last = new Map<string, { probe: RpcProbe, at: Date }>()

  constructor (readonly workers: readonly RpcWorkerConfig[]) {}

  has (name: string): boolean { return this.workers.some((w) => w.name === name) }

  /** Every worker's state; `usedBy`: the models loaded across each worker, by worker name. */
  async describe (usedBy: ReadonlyMap<string, string[]> = new Map()): Promise<RpcWorkerStatus[]> {
    return Promise.all(this.workers.map(async (worker) => {
      const users = usedBy.get(worker.name) ?? []
      if (users.length > 0) {
        const seen = this.last.get(worker.name)
        return status(worker, 'in_use', seen?.probe.state === 'ready' ? seen.probe : null, seen?.at ?? null, null, users)
      }
      const checked = await this.check(worker, PROBE_TIMEOUT_MS)
      if (checked.state === 'refused') return status(worker, 'refused', null, null, checked.error, [])
      return status(worker, checked.state, checked, this.last.get(worker.name)!.at, 'error' in checked ? checked.error : null, [])
    }))
  }

  /**
   * Before a model is started across workers: each must answer now, or the load fails at once with the worker's
   * state (llama-server would hang on a worker that does not answer, or abort on one that refuses).
   * @returns the `--rpc` endpoints, in order, and the memory their devices have free
   * @throws UnavailableError naming the first worker that is not ready and why
   */
  async prepare (names: readonly string[], model: string): Promise<{ endpoints: string[], freeBytes: number }> {
    const workers = names.map((name) => this.worker(name))
    const probes = await Promise.all(workers.map(async (worker) => ({ worker, probe: await this.check(worker, PROBE_TIMEOUT_MS) })))
    for (const { worker, probe } of probes) {
      if (probe.state !== 'ready') {
        throw new UnavailableError(`model "${model}" needs RPC worker "${worker.name}" (${formatHostPort(worker.endpoint)}), which is ${probe.state}: ${probe.error}`, 'rpc_worker_unavailable')
      }
    }
    const freeBytes = probes.reduce((sum, { probe }) => sum + (probe.state === 'ready' ? probe.devices.reduce((s, d) => s + d.freeBytes, 0) : 0), 0)
    return { endpoints: workers.map((w) => formatHostPort(w.endpoint)), freeBytes }
  }

  /**
   * After the llama-server of a model split across workers died: the first worker that no longer answers, said in
   * a sentence (`RPC worker "b" (127.0.0.1:50053) is unreachable: connection refused`), or null when all answer.
   */
  async explainLoss (names: readonly string[]): Promise<string | null> {
    const probes = await Promise.all(names.map(async (name) => ({ worker: this.worker(name), probe: await this.probe(this.worker(name), LOSS_PROBE_TIMEOUT_MS) })))
    const lost = probes.find(({ probe }) => probe.state === 'unreachable' || probe.state === 'incompatible')
    return lost ? `RPC worker "${lost.worker.name}" (${formatHostPort(lost.worker.endpoint)}) is ${lost.probe.state}: ${(lost.probe as { error: string }).error}` : null
  }

  private worker (name: string): RpcWorkerConfig {
    const worker = this.workers.find((w) => w.name === name)
    if (!worker) throw new Error(`no RPC worker named "${name}" in config.yaml's rpc.workers`)
    return worker
  }

  /** Refused by its address, else asked. */
  private async check (worker: RpcWorkerConfig, timeoutMs: number): Promise<RpcProbe | { state: 'refused', error: string }> {
    const refusal = await this.refusal(worker)
    return refusal !== null ? { state: 'refused', error: refusal } : this.probe(worker, timeoutMs)
  }

  private async probe (worker: RpcWorkerConfig, timeoutMs: number): Promise<RpcProbe> {
    const probe = await probeRpcWorker(worker.endpoint, timeoutMs)
    this.last.set(worker.name, { probe, at: new Date() })
    return probe
  }

  /**
   * A worker named by a host name is checked when used: one that resolves to a public address is refused unless
   * allowed, like a public address written in config.yaml (refused at load).
   */
  private async refusal (worker: RpcWorkerConfig): Promise<string | null> {
    if (worker.allowPublic || addressKind(worker.endpoint.host) !== 'name') return null
    let addresses: Array<{ address: string }>
    try {
      addresses = await lookup(worker.endpoint.host, { all: true })
    } catch (err) {
      return `its host name does not resolve: ${(err as Error).message}`
    }
    const open = addresses.find((a) => addressKind(a.address) === 'public')
    return open ? `${worker.endpoint.host} resolves to the public address ${open.address}, and the RPC protocol has no authentication; set allow_public: true on the worker to use it anyway` : null
  }
}

function status (worker: RpcWorkerConfig, state: RpcWorkerState, probe: RpcProbe | null, at: Date | null, error: string | null, usedBy: string[]): RpcWorkerStatus {
  return {
    name: worker.name,
    endpoint: formatHostPort(worker.endpoint),
    state,
    version: probe !== null && 'version' in probe ? probe.version : null,
    devices: probe?.state === 'ready' ? probe.devices : [],
    checkedAt: at?.toISOString() ?? null,
    error,
    usedBy,
  }
}
