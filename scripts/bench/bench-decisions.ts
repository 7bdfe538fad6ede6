import { performance } from 'node:perf_hooks'
import type { Pool } from 'undici'
import { readGgufHeader } from '../../core/base/gguf-header.js'
import { systemOnePrompts } from '../../plugins/decisions/decision-prompts.js'
import { SCHEMES, taskPlans } from '../../plugins/decisions/decision-schemes.js'
import type { Lease } from '../../plugins/leases/lease.js'
import { decisionMetadata } from '../fixtures/decision-fixtures.js'
import { writeRealisticModel } from '../fixtures/realistic-model.js'
import { percentile } from '../stats.js'
import { startSideBySide, type SideBySide } from './bench-setups.js'

/**
 * The decisions scenario: one 4-question System One decision through llamagate, against one `/completion` of a
 * single token on the same prompt (its first question's, read whole) through llama-server itself and its router,
 * side by side in each round; then decisions per second at 1 and 4 at once through llamagate (4 slots). The model is
 * the tests' tiny openjev fixture on Qwen2's vocabulary: the figures are of the path, not of a model's arithmetic.
 */
export interface DecisionsOptions {
  build: Parameters<typeof startSideBySide>[0]['build']
  llamaCppSrc: string
  dir: string
  reps: number
  threads?: number
  say: (line: string) => void
}

const STATE = { ticket: 'My order #4471 arrived broken, the box was crushed and the charger is missing. I have asked twice already and nobody answered. I want a refund or a new one sent today.', customer: { plan: 'pro', since: '2021-04-02', orders: 37 } }
const QUESTIONS = {
  route: { type: 'choice', instructions: 'Which team should take this ticket?', criteria: { refunds: 'money back', shipping: 'delivery problems', support: 'product help', sales: 'new orders' } },
  angry: { type: 'noul', instructions: 'Is the customer angry?' },
  urgency: { type: 'score', instructions: 'How urgent is it?', criteria: ['not urgent', 'this week', 'today', 'at once'] },
  escalate: { type: 'noul', instructions: 'Should a manager see it?' },
} as const

export async function benchDecisions (o: DecisionsOptions): Promise<Record<string, unknown>> {
  const file = `${o.dir}/openjev.gguf`
  await writeRealisticModel({
    file, llamaCppSrc: o.llamaCppSrc, vocab: 'qwen2', template: 'Qwen-Qwen2.5-7B-Instruct', eosToken: '<|im_end|>', name: 'bench openjev',
    metadata: decisionMetadata('qwen2', { type: 'openjev', temperatures: { choice: 1.5, noul: 0.75 } }),
  })
  const prompt = await firstPrompt(file)
  const { targets, close } = await startSideBySide({ build: o.build, file, label: 'openjev', dir: o.dir, shape: { ctxPerSlot: 1024, parallel: 4, ...(o.threads !== undefined ? { threads: o.threads } : {}) }, connections: 4 })
  try {
    const decide = (): Promise<unknown> => post(targets.llamagate.pool, '/v1/systemone', { model: targets.llamagate.model, state: STATE, questions: QUESTIONS })
    const complete = (setup: SideBySide): Promise<unknown> => post(targets[setup].pool, '/completion', { model: targets[setup].model, prompt, n_predict: 1, cache_prompt: false })
    // Warm: each loaded, its first request behind it.
    await decide()
    for (const setup of ['direct', 'router'] as const) await complete(setup)
    const ms: Record<'decision' | 'direct' | 'router', number[]> = { decision: [], direct: [], router: [] }
    for (let r = 0; r < o.reps; r++) {
      ms.decision.push(await timed(decide))
      ms.direct.push(await timed(() => complete('direct')))
      ms.router.push(await timed(() => complete('router')))
    }
    const stats = (v: number[]) => ({ median_ms: round(percentile(v, 50)), p95_ms: round(percentile(v, 95)) })
    const one = { decision_4_questions: stats(ms.decision), completion_1_token_direct: stats(ms.direct), completion_1_token_router: stats(ms.router) }
    const ratio = {
      vs_direct: round(percentile(ms.decision, 50) / percentile(ms.direct, 50)),
      vs_router: round(percentile(ms.decision, 50) / percentile(ms.router, 50)),
    }
    o.say(`one 4-question decision ${one.decision_4_questions.median_ms} ms (p95 ${one.decision_4_questions.p95_ms}); one 1-token /completion of its first prompt: direct ${one.completion_1_token_direct.median_ms} ms, router ${one.completion_1_token_router.median_ms} ms; ratio ${ratio.vs_direct} / ${ratio.vs_router}`)
    const rates: Record<string, number> = {}
    for (const concurrency of [1, 4]) {
      const count = o.reps * 4
      const started = performance.now()
      let next = 0
      await Promise.all(Array.from({ length: concurrency }, async () => { while (next++ < count) await decide() }))
      rates[`at_${concurrency}`] = round(count / ((performance.now() - started) / 1000))
      o.say(`${concurrency} at once: ${rates[`at_${concurrency}`]} decisions/s (4 questions each)`)
    }
    return { model: 'tiny openjev (Qwen2 vocabulary)', questions: 4, prompt_chars: prompt.length, reps: o.reps, ...one, decision_vs_completion: ratio, decisions_per_second: rates }
  } finally {
    await close()
  }
}

/** The first question's prompt, rendered as llamagate renders it. */
async function firstPrompt (file: string): Promise<string> {
  const { metadata } = await readGgufHeader(file, { maxArrayLength: 0 })
  const maker = systemOnePrompts(SCHEMES.openjev!, metadata['tokenizer.chat_template.systemone'] as string, {})
  const question = { id: 'route', type: 'choice' as const, instructions: QUESTIONS.route.instructions, options: Object.entries(QUESTIONS.route.criteria).map(([key, description]) => ({ key, description })) }
  const [plan] = taskPlans(SCHEMES.openjev!, [question])
  return maker.render(plan!, [], { state: STATE, questions: [question] }, null as unknown as Lease)
}

async function post (pool: Pool, path: string, body: unknown): Promise<unknown> {
  const res = await pool.request({ method: 'POST', path, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  const text = await res.body.text()
  if (res.statusCode !== 200) throw new Error(`${path} answered ${res.statusCode}: ${text.slice(0, 300)}`)
  return JSON.parse(text)
}

async function timed (run: () => Promise<unknown>): Promise<number> {
  const started = performance.now()
  await run()
  return performance.now() - started
}

function round (n: number): number { return Math.round(n * 1000) / 1000 }
