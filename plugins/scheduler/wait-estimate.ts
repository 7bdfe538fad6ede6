// How many recent samples of each kind the estimates look at: enough to smooth one odd run, few enough to follow a
// change (a longer prompt mix, a reload with other options, users who think longer).
const KEEP = 20
// Before a model's first load: a llama-server start, then its weights read at about a disk's speed (the page cache
// is faster, a network disk slower; the first measured load replaces it).
const START_PRIOR_MS = 250
const READ_PRIOR_BYTES_PER_MS = 2e6
// Before a model's first unload: a stop is quick; a prompt-cache save adds its bytes' write.
const UNLOAD_PRIOR_MS = 150
// Gaps between a model going idle and its next request: a prediction needs a few of them.
const MIN_GAPS = 3
// Idle longer than this many typical gaps, nobody is expected back soon.
const GAP_PATIENCE = 2

/**
 * What the scheduler has measured of each model (by name and purpose, estimateKey): how long its llama-server took
 * to start and serve (restores included), how long its restores and unloads took, how long its requests held a slot,
 * how fast it read prompts and generated, and how long after going idle its next request came. The swap decision
 * (swap-costs.ts) reads these; the expected waits of /api/ps and streamed progress are medians of what was measured
 * only (null before anything was), while the swap decision may use a prior from the GGUF's size before a first load.
 */
export class WaitEstimate {
  private readonly loads = new Map<string, number[]>()
  /** Loads whose start was prepared while they waited for room: from the room given to serving. */
  private readonly preparedLoads = new Map<string, number[]>()
  /** Preparations (RuntimeProcess.prepare): from the spawn to the gate, what a prepared load no longer waits for. */
  private readonly preparations = new Map<string, number[]>()
  private readonly restores = new Map<string, number[]>()
  private readonly unloads = new Map<string, number[]>()
  private readonly requests = new Map<string, number[]>()
  private readonly promptSpeeds = new Map<string, number[]>()
  private readonly generateSpeeds = new Map<string, number[]>()
  private readonly gaps = new Map<string, number[]>()
  /** When each model last went idle (ms since epoch): its next request's arrival measures the gap. */
  private readonly idleSince = new Map<string, number>()

  /** A load of `key` took `ms`, from spawn to serving (its restore included); `prepared`: from the room given, its start prepared before. */
  loaded (key: string, ms: number, prepared = false): void { remember(prepared ? this.preparedLoads : this.loads, key, ms) }

  /** A runtime of `key` was prepared up to its gate in `ms`. */
  prepared (key: string, ms: number): void { remember(this.preparations, key, ms) }

  /** What preparing `key` ahead takes off a load (spawn to gate, median), or null before one was measured. */
  preparationMs (key: string): number | null { return median(this.preparations.get(key)) }

  /** Restoring `key`'s saved prompt caches into a fresh runtime took `ms` (part of its load). */
  restored (key: string, ms: number): void { remember(this.restores, key, ms) }

  /** Unloading `key` to make room took `ms` (its prompt caches saved, its runtime stopped). */
  unloaded (key: string, ms: number): void { remember(this.unloads, key, ms) }

  /**
   * A request on `key` held its slot `ms`. With its token counts and first token (as its usage record has them), its
   * prompt and generation speeds too: the prompt read until the first token, the rest generating.
   */
  served (key: string, ms: number, tokens?: { evaluated: number, generated: number, firstTokenAfterMs?: number }): void {
    remember(this.requests, key, ms)
    const prefillMs = tokens?.firstTokenAfterMs
    if (tokens === undefined || prefillMs === undefined || prefillMs <= 0 || prefillMs >= ms) return
    if (tokens.evaluated >= 16) remember(this.promptSpeeds, key, tokens.evaluated / prefillMs * 1000)
    if (tokens.generated >= 4) remember(this.generateSpeeds, key, tokens.generated / (ms - prefillMs) * 1000)
  }

  /** Every request of `model` left it: the gap to its next request counts from now. */
  wentIdle (model: string, now = Date.now()): void { this.idleSince.set(model, now) }

  /** A request for `model` arrived: the gap since it went idle, if it had, is measured. */
  arrived (model: string, now = Date.now()): void {
    const since = this.idleSince.get(model)
    if (since === undefined) return
    this.idleSince.delete(model)
    remember(this.gaps, model, now - since)
  }

  /** The median load time of `key`, or null before its first load. */
  loadMs (key: string): number | null { return median(this.loads.get(key)) }

  /**
   * What (re)loading `key` costs once it has room: its measured loads, else a prior from the GGUF's size; `prepared`
   * (its start is, or will be, prepared while it waits): its prepared loads first.
   */
  swapInMs (key: string, sizeBytes: number, prepared = false): number {
    return (prepared ? median(this.preparedLoads.get(key)) : null) ?? this.loadMs(key) ?? Math.round(START_PRIOR_MS + sizeBytes / READ_PRIOR_BYTES_PER_MS)
  }

  /** What unloading `key` costs: its measured unloads, else a prior. */
  swapOutMs (key: string): number { return median(this.unloads.get(key)) ?? UNLOAD_PRIOR_MS }

  /** The median time a request of `key` holds its slot, or null before one ended. */
  requestMs (key: string): number | null { return median(this.requests.get(key)) }

  /**
   * How long until `model`'s next request is expected: its typical gap less how long it has been idle; null when too
   * few gaps were seen, it is not idle, or it has been idle much longer than usual (nobody is expected back soon).
   */
  nextArrivalMs (model: string, now = Date.now()): { inMs: number, lateAfterMs: number } | null {
    const since = this.idleSince.get(model)
    const gaps = this.gaps.get(model)
    if (since === undefined || gaps === undefined || gaps.length < MIN_GAPS) return null
    const typical = median(gaps)!
    const idleFor = now - since
    // `lateAfterMs`: when it stops being expected (and a hold for it ends).
    return idleFor >= GAP_PATIENCE * typical ? null : { inMs: Math.max(typical - idleFor, 0), lateAfterMs: GAP_PATIENCE * typical - idleFor }
  }

  /**
   * How long a request `position` places back in line waits for one of `parallel` slots: `position` requests (the
   * one in a slot the longest finishing first) each taking the median time, `parallel` at a time. Null before
   * any request of `key` ended.
   */
  queueMs (key: string, position: number, parallel: number): number | null {
    const typical = median(this.requests.get(key))
    return typical === null ? null : Math.round(position * typical / Math.max(parallel, 1))
  }

  /** Everything measured of `key` (medians; null where nothing was), for /api/ps and /metrics. */
  figures (key: string, model: string): CostFigures {
    return {
      loadMs: this.loadMs(key),
      preparedLoadMs: median(this.preparedLoads.get(key)),
      prepareMs: this.preparationMs(key),
      restoreMs: median(this.restores.get(key)),
      unloadMs: median(this.unloads.get(key)),
      requestMs: this.requestMs(key),
      promptTokensPerS: median(this.promptSpeeds.get(key)),
      generatedTokensPerS: median(this.generateSpeeds.get(key)),
      returnGapMs: median(this.gaps.get(model)),
    }
  }
}

/** The medians the scheduler has measured of a model (null: nothing measured yet). */
export interface CostFigures {
  loadMs: number | null
  /** From the room given to serving, for a load whose start was prepared while it waited. */
  preparedLoadMs: number | null
  /** A preparation, from the spawn to the gate: what a load prepared ahead no longer waits for. */
  prepareMs: number | null
  restoreMs: number | null
  unloadMs: number | null
  requestMs: number | null
  promptTokensPerS: number | null
  generatedTokensPerS: number | null
  /** From the model going idle to its next request. */
  returnGapMs: number | null
}

function remember (map: Map<string, number[]>, key: string, value: number): void {
  const list = map.get(key) ?? []
  list.push(value)
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
