import type { Lease } from '../leases/lease.js'

// Model files whose labels are kept: each holds up to a few hundred codes.
const MAX_MODELS = 32

/**
 * The token each label code is, per model file (null: not one token), asked of the model's own tokenizer as llama.cpp
 * reads a label: the bare text, no special tokens added or parsed. Only as many codes are asked as a request needs.
 */
export class LabelTokens {
  private readonly byModel = new Map<string, Map<string, number | null>>()

  /**
   * The first `count` codes of `codes` that are one token each (`allCodes`: each of the first `count` must be),
   * with their tokens; fewer where the codes run out.
   * @throws Error naming a code that is not one token, where all must be
   */
  async first (lease: Lease, codes: readonly string[], count: number, allCodes: boolean): Promise<{ codes: string[], tokens: number[] }> {
    const found = { codes: [] as string[], tokens: [] as number[] }
    for (const code of codes) {
      if (found.codes.length >= count) break
      const token = await this.single(lease, code)
      if (token === null) {
        if (allCodes) throw new Error(`decision label '${code}' is not a single token in this model's vocabulary`)
        continue
      }
      found.codes.push(code)
      found.tokens.push(token)
    }
    return found
  }

  /** The token `text` is in the lease's model, or null when it is not one token. */
  async single (lease: Lease, text: string): Promise<number | null> {
    const known = this.modelMap(lease)
    let token = known.get(text)
    if (token === undefined) {
      const { tokens } = await lease.endpoint.postJson<{ tokens: unknown }>('/tokenize', { content: text, add_special: false, parse_special: false }, lease.signal)
      token = Array.isArray(tokens) && tokens.length === 1 && Number.isInteger(tokens[0]) ? tokens[0] as number : null
      known.set(text, token)
    }
    return token
  }

  private modelMap (lease: Lease): Map<string, number | null> {
    const key = `${lease.model.name}\0${lease.model.digest ?? ''}`
    let known = this.byModel.get(key)
    if (known === undefined) {
      if (this.byModel.size >= MAX_MODELS) this.byModel.delete(this.byModel.keys().next().value!)
      known = new Map()
      this.byModel.set(key, known)
    }
    return known
  }
}
