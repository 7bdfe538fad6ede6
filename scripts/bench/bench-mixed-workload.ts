import { prose } from './bench-chat.js'
import type { TurnResult } from './bench-mixed-client.js'

/**
 * The mixed scenario's workload: agent users, each on one of several models, each with a long system prompt of its
 * own and a conversation that grows a turn at a time (the user's new message, then the model's answer of a fixed
 * length), with think times between turns. Everything random comes from one seed, so every setup is given the
 * same users, models, texts and pauses.
 */

export interface WorkloadOptions {
  users: number
  /** How many models the users are spread over (every model gets at least one user where there are enough). */
  models: number
  turns: number
  seed: number
  /** Words of each user's system prompt (about a token each). */
  systemWords: number
  /** Words of each user message. */
  messageWords: number
  /** A user's pause before each turn, drawn uniformly from this range (ms); the first one staggers the starts. */
  thinkMs: [number, number]
}

export interface UserPlan {
  user: number
  /** Index into the models. */
  model: number
  system: string
  /** Each turn's user message. */
  messages: string[]
  /** The pause before each turn (ms). */
  thinkMs: number[]
}

/** mulberry32: a small seeded generator, the same numbers on every machine. */
export function seededRandom (seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

export function planWorkload (o: WorkloadOptions): UserPlan[] {
  const random = seededRandom(o.seed)
  // The first users cover every model once (in a seeded order); the rest land anywhere.
  const order = Array.from({ length: o.models }, (_, i) => i)
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [order[i], order[j]] = [order[j]!, order[i]!]
  }
  const [low, high] = o.thinkMs
  return Array.from({ length: o.users }, (_, user) => {
    const model = user < o.models ? order[user]! : Math.floor(random() * o.models)
    const textSeed = o.seed * 7919 + user * 104_729
    return {
      user,
      model,
      system: `You are coding agent ${user + 1}. ${prose(o.systemWords, textSeed)}`,
      messages: Array.from({ length: o.turns }, (_, turn) => prose(o.messageWords, textSeed + 1 + turn)),
      thinkMs: Array.from({ length: o.turns }, () => Math.round(low + random() * (high - low))),
    }
  })
}

/**
 * The most any one user thinks over its turns: no setup's wall time (from the run's start to the last answer) can be
 * shorter, however fast it serves, so a wall ratio near this floor over router mode's wall measures the think times.
 */
export function thinkFloorMs (plans: UserPlan[]): number {
  return Math.max(0, ...plans.map((p) => p.thinkMs.reduce((sum, ms) => sum + ms, 0)))
}

/** One request as the client saw it, in ms from the run's start; a turn that had to be sent again counts its first send. */
export interface TurnRecord {
  user: number
  model: number
  turn: number
  sentAt: number
  /** First token of the attempt that succeeded; -1 when every attempt failed. */
  firstAt: number
  endAt: number
  ok: boolean
  /** Attempts that failed before the last one (or all of them, when the turn failed). */
  failures: number
  errors: string[]
  promptTokens: number
  cachedTokens: number
  /** Prompt tokens llama-server evaluated for this answer (its timings.prompt_n). */
  evaluatedTokens: number
}

/** Sends one turn: the model's index, the conversation so far; the result's times from the same clock as `now`. */
export type SendTurn = (model: number, messages: Array<{ role: string, content: string }>) => Promise<TurnResult>

/**
 * Every user's conversation at once, each turn after its think time, until all are done. A failed turn is sent again
 * after a short pause (a client's retry), up to `attempts` times; a turn that never got an answer is left out of the
 * conversation.
 */
export async function runUsers (plans: UserPlan[], send: SendTurn, now: () => number, attempts = 3): Promise<TurnRecord[]> {
  const records: TurnRecord[] = []
  const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))
  await Promise.all(plans.map(async (plan) => {
    const history = [{ role: 'system', content: plan.system }]
    for (const [turn, message] of plan.messages.entries()) {
      await sleep(plan.thinkMs[turn]!)
      history.push({ role: 'user', content: message })
      const sentAt = now()
      const errors: string[] = []
      let result: TurnResult | null = null
      for (let a = 0; a < attempts; a++) {
        const r = await send(plan.model, history)
        if (r.ok) { result = r; break }
        errors.push(r.error ?? 'failed')
        if (a + 1 < attempts) await sleep(500)
      }
      records.push({
        user: plan.user, model: plan.model, turn, sentAt, firstAt: result?.firstAt ?? -1, endAt: result?.endAt ?? now(), ok: result !== null,
        failures: errors.length, errors, promptTokens: result?.promptTokens ?? 0, cachedTokens: result?.cachedTokens ?? 0, evaluatedTokens: result?.evaluatedTokens ?? 0,
      })
      if (result === null) history.pop()
      else history.push({ role: 'assistant', content: result.text })
    }
  }))
  return records.sort((a, b) => a.sentAt - b.sentAt)
}
