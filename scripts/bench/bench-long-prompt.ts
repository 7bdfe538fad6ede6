import { chatStream, prose } from './bench-chat.js'
import { SIDE_BY_SIDE, startSideBySide, type ScenarioOptions, type ServerShape, type SideBySide } from './bench-setups.js'
import { percentile } from '../stats.js'

/**
 * The long-prompt scenario: one prompt of each size (in tokens, about), a new one every time so that
 * nothing comes from a cache, through direct llama-server, its router and llamagate in rotated order; time to
 * first token and prompt tokens per second.
 */

const SETUPS = SIDE_BY_SIDE
const TOKENS_PER_WORD = 1.06
type Setup = SideBySide

export interface LongPromptOptions extends ScenarioOptions {
  /** Prompt sizes, in tokens (about). */
  sizes: number[]
  reps: number
}

export async function benchLongPrompt (o: LongPromptOptions): Promise<Record<string, unknown>> {
  // One slot with room for the longest prompt and the answer, and for a vocabulary that takes more tokens a word.
  const shape: ServerShape = { ctxPerSlot: Math.ceil(Math.max(...o.sizes) * 1.15) + 512, parallel: 1, ...(o.threads !== undefined ? { threads: o.threads } : {}) }
  const { targets, close } = await startSideBySide({ ...o, shape, connections: 1 })
  try {
    let nonce = 0
    const send = async (setup: Setup, words: number) => {
      // A number no other prompt starts with: the cache holds nothing of it past the template's first tokens.
      const content = `Note ${++nonce}: ${prose(words, nonce)}\n\nSum this up.`
      const result = await chatStream(targets[setup].pool, { model: targets[setup].model, messages: [{ role: 'user', content }], max_tokens: 2, temperature: 0, ignore_eos: true })
      if (!result.ok || result.ttftMs < 0) throw new Error(`${setup}, ${words} words: ${result.error ?? 'no text in the answer'}`)
      return result
    }
    for (const setup of SETUPS) await send(setup, 16) // load, and warm up
    const sizes = []
    for (const size of o.sizes) {
      const rows: Array<{ setup: Setup, ttftMs: number, promptTokens: number, cachedTokens: number, promptMs: number }> = []
      for (let rep = 0; rep < o.reps; rep++) {
        for (let k = 0; k < SETUPS.length; k++) {
          const setup = SETUPS[(rep + k) % SETUPS.length]!
          // The template and the words around them: about 60 tokens; Llama 3's vocabulary reads prose() at ~1.06 a word.
          const result = await send(setup, Math.round((size - 60) / TOKENS_PER_WORD))
          rows.push({ setup, ttftMs: result.ttftMs, promptTokens: result.promptTokens, cachedTokens: result.cachedTokens, promptMs: result.promptMs })
          o.say(`  ${size}: ${setup} ${result.ttftMs.toFixed(0)} ms, ${result.promptTokens} prompt tokens (${result.cachedTokens} cached)`)
        }
      }
      const entry: Record<string, unknown> = { size }
      for (const setup of SETUPS) {
        const mine = rows.filter((r) => r.setup === setup)
        entry[setup] = {
          ttft_p50_ms: percentile(mine.map((r) => r.ttftMs), 50),
          prompt_tokens: percentile(mine.map((r) => r.promptTokens), 50),
          prompt_tps: percentile(mine.map((r) => (r.promptTokens - r.cachedTokens) / (r.ttftMs / 1000)), 50),
          // What the request cost outside the model's own prompt evaluation: the part a proxy adds to.
          outside_model_p50_ms: percentile(mine.map((r) => r.ttftMs - r.promptMs), 50),
          ttft_ms: mine.map((r) => r.ttftMs),
        }
      }
      const med = (setup: Setup): number => (entry[setup] as { ttft_p50_ms: number }).ttft_p50_ms
      const outside = (setup: Setup): number => (entry[setup] as { outside_model_p50_ms: number }).outside_model_p50_ms
      entry.added_ttft_ms = med('llamagate') - med('direct')
      // Prompt evaluation of thousands of tokens varies by more than a proxy's cost from one run to the next;
      // the time outside it does not.
      entry.added_outside_model_ms = outside('llamagate') - outside('direct')
      entry.ttft_ratio_vs_direct = med('llamagate') / med('direct')
      entry.ttft_ratio_vs_router = med('llamagate') / med('router')
      sizes.push(entry)
    }
    o.say(`\nlong prompts (${o.label}; ${o.reps} of each size per setup, in rotated order): time to first token, medians`)
    o.say('tokens  setup       ttft ms   prompt tok/s   outside the model ms')
    for (const entry of sizes as Array<Record<string, any>>) {
      for (const setup of SETUPS) o.say(`${String(entry[setup].prompt_tokens).padStart(6)}  ${setup.padEnd(10)} ${entry[setup].ttft_p50_ms.toFixed(0).padStart(8)}  ${entry[setup].prompt_tps.toFixed(1).padStart(12)}   ${entry[setup].outside_model_p50_ms.toFixed(2).padStart(20)}`)
      o.say(`        added TTFT ${entry.added_ttft_ms.toFixed(1)} ms, of which outside the model ${entry.added_outside_model_ms.toFixed(2)} ms (target ≤ 2); llamagate/direct ${entry.ttft_ratio_vs_direct.toFixed(4)}, llamagate/router ${entry.ttft_ratio_vs_router.toFixed(4)}`)
    }
    return { model: o.label, reps: o.reps, sizes }
  } finally {
    await close()
  }
}
