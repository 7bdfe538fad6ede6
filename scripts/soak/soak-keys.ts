import { hashSecret, newSecret, writeKeysFile, type KeyLimits, type Scope } from '../../plugins/security/keys-file.js'
import { OUTCOMES, type Outcome, type RequestResult, type RequestSpec } from './soak-clients.js'
import { http } from './soak-probes.js'

// The soak's three API keys (a keys file in its data folder), which key each request shows, and the audit at the
// end: what GET /api/usage counted for each key against what the key's clients were told by the answers. The
// hostile soak adds two attackers' keys, outside the audit: each attacker checks its own usage.

export const KEY_NAMES = ['ops', 'chat', 'batch'] as const
export type KeyName = (typeof KEY_NAMES)[number]

export interface SoakKey { name: KeyName, secret: string, scopes: Scope[], models: string[], limits: KeyLimits }
export type SoakKeys = Record<KeyName, SoakKey>

/** The models chat and batch may use. */
export const KEYED_MODELS = ['soak/alpha', 'soak/beta'] as const
/** The ops key's alone: the one kill_runtime kills, so that no chat or batch request is ever cut by a fault. */
export const OPS_ONLY_MODEL = 'soak/gamma'
/** batch's requests per minute: low enough that a run of a minute passes it. */
const BATCH_RPM = 12
/** How long a client told to come back waits at most (it honours Retry-After up to this, and so keeps pushing). */
export const RETRY_CAP_MS = 2000
/** Every how many of a chat client's requests one asks for soak/gamma, which its key may not use (the first: its 3rd). */
const REFUSED_EVERY = 20

export function soakKeys (): SoakKeys {
  const key = (name: KeyName, scopes: Scope[], models: string[], limits: KeyLimits): SoakKey => ({ name, secret: newSecret(), scopes, models, limits })
  return {
    ops: key('ops', ['infer', 'manage', 'admin'], ['*'], {}),
    chat: key('chat', ['infer'], [...KEYED_MODELS], { concurrent: 2 }),
    batch: key('batch', ['infer'], [...KEYED_MODELS], { concurrent: 1, requests_per_minute: BATCH_RPM }),
  }
}

/** The hostile soak's attackers' keys: `relay` may use the hostile upstream's models only, `dodger` has a day of tokens. */
export interface AttackerKey { name: 'relay' | 'dodger', secret: string, scopes: Scope[], models: string[], limits: KeyLimits }
export type AttackerKeys = Record<AttackerKey['name'], AttackerKey>

export function attackerKeys (upstreamModels: string, dodgerModel: string, tokensPerDay: number): AttackerKeys {
  return {
    relay: { name: 'relay', secret: newSecret(), scopes: ['infer'], models: [upstreamModels], limits: {} },
    dodger: { name: 'dodger', secret: newSecret(), scopes: ['infer'], models: [dodgerModel], limits: { tokens_per_day: tokensPerDay } },
  }
}

export async function writeSoakKeys (file: string, keys: SoakKeys, attackers: AttackerKeys | null): Promise<void> {
  const created = new Date().toISOString()
  const all: Array<SoakKey | AttackerKey> = [...KEY_NAMES.map((n) => keys[n]), ...(attackers === null ? [] : [attackers.relay, attackers.dodger])]
  await writeKeysFile(file, { keys: all.map((k) => ({ name: k.name, hash: hashSecret(k.secret), scopes: k.scopes, models: k.models, limits: k.limits, created })) })
}

/**
 * The key client `index` works under: chat and batch take turns, chat never more clients than its concurrent limit
 * (a 429 is no outcome of chat's), batch the rest (its limit of 1 then refuses some of them: its 429s).
 */
export function clientKey (index: number, keys: SoakKeys): KeyName {
  return index % 2 === 0 && index / 2 < keys.chat.limits.concurrent! ? 'chat' : 'batch'
}

/**
 * One request of the mix, shown under a key: leavers (their usage is partial) and soak/gamma go under ops; whole
 * requests on alpha and beta under the client's own key, which must get a whole answer (batch: or a 429). A chat
 * client's `n`-th request asks for soak/gamma instead every REFUSED_EVERY, which must be refused (403).
 */
export function keyedRequest (spec: RequestSpec, key: KeyName, n: number, keys: SoakKeys): RequestSpec {
  if (key === 'chat' && n % REFUSED_EVERY === 2) {
    return { surface: spec.surface, stream: spec.stream, model: OPS_ONLY_MODEL, maxTokens: spec.maxTokens, key: keys.chat, expect: ['refused'] }
  }
  if (spec.leave !== undefined || !(KEYED_MODELS as readonly string[]).includes(spec.model)) return spec
  return { ...spec, key: keys[key], expect: key === 'batch' ? ['finished', 'limited'] : ['finished'] }
}

interface Counts { requests: number, prompt_tokens: number, generated_tokens: number }
const zero = (): Counts => ({ requests: 0, prompt_tokens: 0, generated_tokens: 0 })

/** Per key: how its requests ended and, per model, the answers and the tokens they reported. */
export class KeyTally {
  readonly outcomes = Object.fromEntries(KEY_NAMES.map((k) => [k, {}])) as Record<KeyName, Partial<Record<Outcome, number>>>
  readonly told = Object.fromEntries(KEY_NAMES.map((k) => [k, {}])) as Record<KeyName, Record<string, Counts>>
  /** A 429's limit, from its words. */
  readonly limitedBy: Record<string, number> = {}
  /** Finished answers of chat or batch that did not say their tokens (their usage cannot be checked). */
  readonly untold: string[] = []
  clients: Record<KeyName, number> = { ops: 0, chat: 0, batch: 0 }

  /** `spec.key` absent: the soak's own key, ops. */
  add (spec: RequestSpec, result: RequestResult): void {
    const name = (spec.key?.name ?? 'ops') as KeyName
    this.outcomes[name][result.outcome] = (this.outcomes[name][result.outcome] ?? 0) + 1
    if (result.outcome === 'limited') {
      const limit = /requests in the last minute/.test(result.reason ?? '') ? 'requests_per_minute' : /running, at its limit/.test(result.reason ?? '') ? 'concurrent' : 'other'
      this.limitedBy[limit] = (this.limitedBy[limit] ?? 0) + 1
    }
    if (result.outcome !== 'finished') return
    if (result.tokens === null) {
      if (name !== 'ops') this.untold.push(`${name} ${spec.surface}${spec.stream ? ' stream' : ''} ${spec.model}`)
      return
    }
    const counts = this.told[name][spec.model] ??= zero()
    counts.requests++
    counts.prompt_tokens += result.tokens.prompt
    counts.generated_tokens += result.tokens.generated
  }
}

interface UsageModel extends Counts { model: string, cached_tokens: number, queue_ms: number, runtime_ms: number }
interface UsageKey { key: string, today: { tokens: number, reserved: number }, models: UsageModel[], totals: Omit<UsageModel, 'model'> }

/**
 * After every client is done: GET /api/usage?all=true (the soak's own key, ops, is an admin) and, for chat and
 * batch, per model, requests, prompt and generated tokens against the sums of what their answers said: equal, or
 * the soak fails. Also: every answer said its tokens, and batch got no more answers than its requests_per_minute
 * allows over the run. `loadSeconds`: how long the clients ran.
 */
export async function auditUsage (base: string, keys: SoakKeys, tally: KeyTally, loadSeconds: number) {
  const problems: string[] = []
  const notes: string[] = []
  const res = await http(`${base}/api/usage?all=true`, { signal: AbortSignal.timeout(15_000) })
  const usage = res.status === 200 ? ((await res.json()) as { keys: UsageKey[] }).keys : []
  if (res.status !== 200) problems.push(`GET /api/usage?all=true answered ${res.status}: ${(await res.text()).slice(0, 200)}`)
  const compared: Array<{ key: KeyName, model: string, gateway: Counts, clients: Counts, equal: boolean }> = []
  for (const key of ['chat', 'batch'] as const) {
    const counted = usage.find((u) => u.key === key)?.models ?? []
    for (const model of [...new Set([...Object.keys(tally.told[key]), ...counted.map((m) => m.model)])].sort()) {
      const g = counted.find((m) => m.model === model)
      const gateway = { requests: g?.requests ?? 0, prompt_tokens: g?.prompt_tokens ?? 0, generated_tokens: g?.generated_tokens ?? 0 }
      const clients = tally.told[key][model] ?? zero()
      const equal = (Object.keys(gateway) as Array<keyof Counts>).every((f) => gateway[f] === clients[f])
      compared.push({ key, model, gateway, clients, equal })
      if (!equal) problems.push(`usage of ${key} on ${model}: the gateway counted ${show(gateway)}, its clients were told ${show(clients)} (requests / prompt / generated)`)
    }
  }
  if (tally.untold.length > 0) problems.push(`${tally.untold.length} answer(s) of chat or batch without token counts: ${[...new Set(tally.untold)].join(', ')}`)
  const batchAnswers = Object.values(tally.told.batch).reduce((n, c) => n + c.requests, 0)
  const batchMost = BATCH_RPM * (Math.floor(loadSeconds / 60) + 1)
  if (batchAnswers > batchMost) problems.push(`batch got ${batchAnswers} answers in ${Math.round(loadSeconds)} s, more than its ${BATCH_RPM} requests per minute allow (${batchMost})`)
  const refused = tally.outcomes.chat.refused ?? 0
  const limited = tally.outcomes.batch.limited ?? 0
  if (refused === 0) notes.push(`no request for ${OPS_ONLY_MODEL} under chat: the run was too short for one (its first is a chat client's 3rd request)`)
  if (limited === 0) notes.push(`no 429 for batch: the run was too short (batch had ${tally.clients.batch} client(s) and ${batchAnswers} answers, its limits: ${JSON.stringify(keys.batch.limits)})`)
  return {
    ok: problems.length === 0,
    problems,
    notes,
    keys: Object.fromEntries(KEY_NAMES.map((k) => [k, {
      scopes: keys[k].scopes, models: keys[k].models, limits: keys[k].limits, clients: tally.clients[k],
      outcomes: Object.fromEntries(OUTCOMES.filter((o) => tally.outcomes[k][o] !== undefined).map((o) => [o, tally.outcomes[k][o]!])),
      told: tally.told[k],
      usage: usage.find((u) => u.key === k) ?? null,
    }])) as Record<KeyName, { scopes: Scope[], models: string[], limits: KeyLimits, clients: number, outcomes: Partial<Record<Outcome, number>>, told: Record<string, Counts>, usage: UsageKey | null }>,
    compared,
    // The attackers' keys (the hostile soak's), for information: each attacker checks its own usage (soak-attackers.ts).
    others: usage.filter((u) => !(KEY_NAMES as readonly string[]).includes(u.key)),
    refused,
    limited,
    limited_by: tally.limitedBy,
  }
}

export type KeysSection = Awaited<ReturnType<typeof auditUsage>>

const show = (c: Counts): string => `${c.requests} / ${c.prompt_tokens} / ${c.generated_tokens}`

export function printKeys (section: KeysSection, say: (line?: string) => void): void {
  say(`\nkeys (a keys file of ${3 + section.others.length}):`)
  for (const k of KEY_NAMES) {
    const key = section.keys[k]
    const limits = Object.entries(key.limits).map(([l, v]) => `${l} ${v}`).join(', ') || 'no limits'
    const outcomes = Object.entries(key.outcomes).map(([o, n]) => `${o} ${n}`).join(', ')
    say(`  ${k.padEnd(6)} ${key.scopes.join('+')} on ${key.models.join(', ')}, ${limits}; ${k === 'ops' ? 'faults (the hostile soak: the first attackers), probes, leavers and soak/gamma' : `${key.clients} client(s)`}: ${outcomes || 'no request'}`)
  }
  say(`  refused (403, a model outside the key's list): ${section.refused}; limited (429 with Retry-After): ${section.limited}${section.limited > 0 ? ` (${Object.entries(section.limited_by).map(([l, n]) => `${l} ${n}`).join(', ')})` : ''}`)
  say('  usage (GET /api/usage?all=true), requests / prompt / generated tokens:')
  for (const c of section.compared) say(`    ${c.key.padEnd(6)} ${c.model.padEnd(12)} gateway ${show(c.gateway).padEnd(20)} clients ${show(c.clients).padEnd(20)} ${c.equal ? 'equal' : 'DIFFERENT'}`)
  for (const m of section.keys.ops.usage?.models ?? []) say(`    ops    ${m.model.padEnd(12)} gateway ${show(m).padEnd(20)} (for information: leavers and faults' requests)`)
  for (const u of section.others) for (const m of u.models) say(`    ${u.key.padEnd(6)} ${m.model.padEnd(12)} gateway ${show(m).padEnd(20)} (an attacker's: checked in its ledger; today ${u.today.tokens} tokens)`)
  for (const note of section.notes) say(`  note: ${note}`)
  say(`  usage audit: ${section.ok ? 'passed, chat and batch counted exactly as their clients were told' : 'FAILED'}`)
}
