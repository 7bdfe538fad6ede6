// How many recent loads and requests of a model the estimates look at: enough to smooth one odd run, few enough to
// follow a change (a longer prompt mix, a reload with other options).
const KEEP = 20

/**
 * What the scheduler has measured of each model (by name and purpose): how long its llama-server took to start and
 * how long its requests held a slot. The expected waits /api/ps and streamed progress show come from these
 * medians only; with nothing measured yet there is no estimate (null), never a guess from the file size.
 */
export class WaitEstimate {
  private readonly loads = new Map<string, number[]>()
  private readonly requests = new Map<string, number[]>()

  /** A load of `key` took `ms`, from spawn to ready. */
  loaded (key: string, ms: number): void { remember(this.loads, key, ms) }

  /** A request on `key` held its slot `ms`. */
  served (key: string, ms: number): void { remember(this.requests, key, ms) }

  /** The median load time of `key`, or null before its first load. */
  loadMs (key: string): number | null { return median(this.loads.get(key)) }

  /**
   * How long a request `position` places back in line waits for one of `parallel` slots: `position` requests (the
   * one in a slot the longest finishing first) each taking the median time, `parallel` at a time. Null before
   * any request of `key` ended.
   */
  queueMs (key: string, position: number, parallel: number): number | null {
    const typical = median(this.requests.get(key))
    return typical === null ? null : Math.round(position * typical / Math.max(parallel, 1))
  }
}

function remember (map: Map<string, number[]>, key: string, ms: number): void {
  const list = map.get(key) ?? []
  list.push(ms)
  if (list.length > KEEP) list.shift()
  map.set(key, list)
}

function median (values: number[] | undefined): number | null {
  if (values === undefined || values.length === 0) return null
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return Math.round(sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2)
}

/** The key a model's measurements are kept under: an embedding instance of a chat model loads and serves differently. */
export function estimateKey (model: string, purpose: string): string {
  return `${model}\0${purpose}`
}
