import { chatStream, prose } from './bench-chat.js'
import { SIDE_BY_SIDE, startSideBySide, type ScenarioOptions, type ServerShape, type SideBySide } from './bench-setups.js'
import { percentile } from '../stats.js'

/**
 * The multi-turn scenario: several conversations at once, each growing turn by turn (a user message, the
 * model's answer, the next message, ...), the same conversations through direct llama-server, its router and
 * llamagate. Turn by turn, each setup in rotated order runs every conversation's next turn at once. A follow-up
 * turn is fast only if it lands on a slot that holds its conversation's prefix: the server's cached tokens say
 * whether it did, and its time to first token what that was worth.
 */

const SETUPS = SIDE_BY_SIDE
type Setup = SideBySide

export interface MultiTurnOptions extends ScenarioOptions {
  conversations: number
  turns: number
  /** Words (about tokens) in each user message. */
  words: number
  /** Tokens in each answer. */
  reply: number
}

interface Turn { setup: Setup, conversation: number, turn: number, ttftMs: number, promptTokens: number, cachedTokens: number, promptMs: number }

export async function benchMultiTurn (o: MultiTurnOptions): Promise<Record<string, unknown>> {
  // A slot per conversation, each with room for the whole conversation.
  const shape: ServerShape = { ctxPerSlot: o.turns * (o.words + o.reply + 40) + 512, parallel: o.conversations, ...(o.threads !== undefined ? { threads: o.threads } : {}) }
  const { targets, close } = await startSideBySide({ ...o, shape, connections: o.conversations })
  try {
    for (const setup of SETUPS) await chatStream(targets[setup].pool, { model: targets[setup].model, messages: [{ role: 'user', content: 'Hello.' }], max_tokens: 2 }) // load
    const histories = Object.fromEntries(SETUPS.map((s) => [s, Array.from({ length: o.conversations }, () => [] as Array<{ role: string, content: string }>)])) as Record<Setup, Array<Array<{ role: string, content: string }>>>
    const turns: Turn[] = []
    for (let turn = 0; turn < o.turns; turn++) {
      for (let k = 0; k < SETUPS.length; k++) {
        const setup = SETUPS[(turn + k) % SETUPS.length]!
        const results = await Promise.all(histories[setup].map(async (history, conversation) => {
          history.push({ role: 'user', content: `${prose(o.words, 1 + conversation * 1000 + turn)}\n\nWhat do you make of this?` })
          const result = await chatStream(targets[setup].pool, { model: targets[setup].model, messages: history, max_tokens: o.reply, temperature: 0, ignore_eos: true })
          if (!result.ok || result.ttftMs < 0) throw new Error(`${setup}, conversation ${conversation}, turn ${turn}: ${result.error ?? 'no text in the answer'}`)
          history.push({ role: 'assistant', content: result.text })
          return { setup, conversation, turn, ttftMs: result.ttftMs, promptTokens: result.promptTokens, cachedTokens: result.cachedTokens, promptMs: result.promptMs }
        }))
        turns.push(...results)
      }
      const line = SETUPS.map((setup) => {
        const mine = turns.filter((t) => t.turn === turn && t.setup === setup)
        return `${setup} ${percentile(mine.map((t) => t.ttftMs), 50).toFixed(0)} ms, ${mine.map((t) => `${t.cachedTokens}/${t.promptTokens}`).join(' ')}`
      }).join('; ')
      o.say(`  turn ${turn + 1}: ${line}`)
    }
    // Follow-up turns: every turn but each conversation's first.
    const followUps = (setup: Setup): Turn[] => turns.filter((t) => t.setup === setup && t.turn > 0)
    const pair = (t: Turn): Turn => turns.find((d) => d.setup === 'direct' && d.conversation === t.conversation && d.turn === t.turn)!
    const perSetup = Object.fromEntries(SETUPS.map((setup) => {
      const mine = followUps(setup)
      return [setup, {
        follow_up_ttft_p50_ms: percentile(mine.map((t) => t.ttftMs), 50),
        follow_up_outside_model_p50_ms: percentile(mine.map((t) => t.ttftMs - t.promptMs), 50),
        cached_share: mine.reduce((s, t) => s + t.cachedTokens, 0) / mine.reduce((s, t) => s + t.promptTokens, 0),
        turns_with_cached_tokens_equal_to_direct: mine.filter((t) => t.cachedTokens === pair(t).cachedTokens).length,
        turns_with_prompt_tokens_equal_to_direct: mine.filter((t) => t.promptTokens === pair(t).promptTokens).length,
        last_prompt_tokens: percentile(turns.filter((t) => t.setup === setup && t.turn === o.turns - 1).map((t) => t.promptTokens), 50),
      }]
    })) as Record<Setup, { follow_up_ttft_p50_ms: number, follow_up_outside_model_p50_ms: number, cached_share: number, turns_with_cached_tokens_equal_to_direct: number, turns_with_prompt_tokens_equal_to_direct: number, last_prompt_tokens: number }>
    const count = followUps('direct').length
    const ratio = perSetup.llamagate.follow_up_ttft_p50_ms / perSetup.direct.follow_up_ttft_p50_ms
    o.say(`\nmulti-turn (${o.label}; ${o.conversations} conversations at once, ${o.turns} turns of ${o.words} words and ${o.reply}-token answers, growing to ~${perSetup.direct.last_prompt_tokens} tokens)`)
    o.say('setup       follow-up TTFT p50 ms   outside the model   prompt tokens from cache   cached = direct   prompt = direct')
    for (const setup of SETUPS) {
      const s = perSetup[setup]
      o.say(`${setup.padEnd(10)} ${s.follow_up_ttft_p50_ms.toFixed(0).padStart(20)}   ${s.follow_up_outside_model_p50_ms.toFixed(0).padStart(14)} ms   ${(s.cached_share * 100).toFixed(1).padStart(23)}%   ${`${s.turns_with_cached_tokens_equal_to_direct}/${count}`.padStart(15)}   ${`${s.turns_with_prompt_tokens_equal_to_direct}/${count}`.padStart(15)}`)
    }
    o.say(`llamagate/direct follow-up TTFT: ${ratio.toFixed(3)} (target ≤ 1.05)`)
    return { model: o.label, conversations: o.conversations, turns: o.turns, words: o.words, reply: o.reply, ...perSetup, follow_up_ttft_ratio_vs_direct: ratio, follow_ups: count, per_turn: turns }
  } finally {
    await close()
  }
}
