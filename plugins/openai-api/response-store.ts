/** One item of a Responses conversation (a message, a function call, its output, reasoning), as OpenAI shapes it. */
export type ResponseItem = Record<string, unknown>

/** A response kept for `previous_response_id`, `item_reference` and `GET /v1/responses/{id}`. */
export interface StoredResponse {
  /** The response object as it was answered. */
  response: Record<string, unknown> & { id: string, output: ResponseItem[] }
  /** The model that answered: a response continues only with the same model. */
  model: string
  /** The name of the key that asked for it (null: keys were off): only that key reaches it, and admins. */
  owner: string | null
  /** The whole conversation up to it: earlier turns' items, its own input items, its output items. */
  conversation: readonly ResponseItem[]
}

export interface ResponseStoreOptions {
  /** The most responses kept. @default 1000 */
  maxResponses?: number
  /** The most bytes kept, counted as each response's conversation and object in JSON. @default 64 MiB */
  maxBytes?: number
}

interface Entry extends StoredResponse { bytes: number }

/**
 * Whose responses a request reaches: one owner's (its key's name; null with keys off, where every request has the
 * same), or any (a key with the admin scope). Another owner's response is as absent as an unknown one.
 */
export type Reach = { owner: string | null } | 'any'

/** What an admin's list shows of each response: enough to find and delete one, not its conversation. */
export interface StoredSummary { id: string, model: string, owner: string | null, created_at: number | null, status: string | null }

/**
 * Responses kept in memory for the stateful side of OpenAI's Responses API, least recently used dropped first
 * once there are more than `maxResponses` or their conversations weigh more than `maxBytes`.
 *
 * Each response holds its whole conversation (the earlier turns' items are shared with its ancestor, not copied),
 * so dropping an old response never breaks a later one that continued it. Each is counted with its whole
 * conversation, which overstates what shared items cost: the budget bounds memory from above.
 */
export class ResponseStore {
  private readonly maxResponses: number
  private readonly maxBytes: number
  // A Map keeps insertion order: a read moves the entry to the end, so the first is the least recently used.
  private readonly entries = new Map<string, Entry>()
  // The output items' ids, for `item_reference`: the response each is in.
  private readonly responseOfItem = new Map<string, string>()
  private bytes = 0

  constructor (options: ResponseStoreOptions = {}) {
    this.maxResponses = options.maxResponses ?? 1000
    this.maxBytes = options.maxBytes ?? 64 * 1024 * 1024
  }

  get size (): number { return this.entries.size }

  get totalBytes (): number { return this.bytes }

  /** Keeps a response, dropping the least recently used ones as needed. Returns false when it alone exceeds the budget. */
  put (stored: StoredResponse): boolean {
    const bytes = Buffer.byteLength(JSON.stringify(stored.conversation)) + Buffer.byteLength(JSON.stringify(stored.response))
    if (bytes > this.maxBytes) return false
    this.drop(stored.response.id)
    this.entries.set(stored.response.id, { ...stored, bytes })
    this.bytes += bytes
    for (const item of stored.response.output) if (typeof item.id === 'string') this.responseOfItem.set(item.id, stored.response.id)
    while (this.entries.size > this.maxResponses || this.bytes > this.maxBytes) {
      this.drop(this.entries.keys().next().value!)
    }
    return true
  }

  /**
   * A stored response `reach` reaches, or null when there is none of that id answered by `model` (any model when
   * not given) that it reaches.
   */
  get (id: string, reach: Reach, model?: string): StoredResponse | null {
    const entry = this.entries.get(id)
    if (entry === undefined || !reaches(reach, entry) || (model !== undefined && entry.model !== model)) return null
    this.entries.delete(id)
    this.entries.set(id, entry)
    return entry
  }

  /** An output item of a stored response of `model` and `owner`, by its id; null when none is kept. */
  item (id: string, owner: string | null, model: string): ResponseItem | null {
    const response = this.responseOfItem.get(id)
    if (response === undefined) return null
    return this.get(response, { owner }, model)?.response.output.find((item) => item.id === id) ?? null
  }

  /** Forgets a response `reach` reaches; false when there was none. */
  delete (id: string, reach: Reach): boolean {
    const entry = this.entries.get(id)
    return entry !== undefined && reaches(reach, entry) && this.drop(id)
  }

  /** Every response kept, least recently used first (an admin's list). */
  list (): StoredSummary[] {
    return [...this.entries.values()].map(({ response, model, owner }) => ({
      id: response.id,
      model,
      owner,
      created_at: typeof response.created_at === 'number' ? response.created_at : null,
      status: typeof response.status === 'string' ? response.status : null,
    }))
  }

  private drop (id: string): boolean {
    const entry = this.entries.get(id)
    if (entry === undefined) return false
    this.entries.delete(id)
    this.bytes -= entry.bytes
    for (const item of entry.response.output) {
      if (typeof item.id === 'string' && this.responseOfItem.get(item.id) === id) this.responseOfItem.delete(item.id)
    }
    return true
  }
}

function reaches (reach: Reach, entry: Entry): boolean {
  return reach === 'any' || reach.owner === entry.owner
}
