import t from 'tap'
import { planContext, type ContextPlan } from '../../../plugins/scheduler/context-fit.js'

const roomy = (): boolean => true
const current: ContextPlan = { numCtx: 4096, numParallel: 4 }

t.test('a prompt that does not fit gets the smallest ladder size holding it and its reply, at most the trained context', async (t) => {
  t.same(planContext({ promptTokens: 5000, reply: 1000, current, trained: 32_768, fits: roomy }), { numCtx: 8192, numParallel: 4 })
  t.same(planContext({ promptTokens: 12_000, reply: 2048, current, trained: 32_768, fits: roomy }), { numCtx: 16_384, numParallel: 4 })
  t.same(planContext({ promptTokens: 12_000, reply: 32_000, current, trained: 32_768, fits: roomy }), { numCtx: 32_768, numParallel: 4 }, 'a reply larger than the rest: the trained context')
  t.same(planContext({ promptTokens: 12_000, reply: -1, current, trained: 32_768, fits: roomy }), { numCtx: 16_384, numParallel: 4 }, 'no limit: room for 4096 tokens of reply')
  t.same(planContext({ promptTokens: 20_000, reply: 100, current, trained: 24_000, fits: roomy }), { numCtx: 24_000, numParallel: 4 }, 'the trained context is a size of its own')
})

t.test('past the trained context, or the memory, the limit and why', async (t) => {
  t.same(planContext({ promptTokens: 40_000, reply: 100, current, trained: 32_768, fits: roomy }), { limit: 32_768, why: ' (its trained context)' })
  t.same(planContext({ promptTokens: 32_768, reply: 100, current, trained: 32_768, fits: roomy }), { limit: 32_768, why: ' (its trained context)' }, 'a prompt as long as the context leaves no room to answer')
  t.same(planContext({ promptTokens: 5000, reply: 100, current, trained: 32_768, fits: () => false }), { limit: 4096, why: ' (the memory holds no larger context)' })
})

t.test('memory: fewer slots before a smaller context; never smaller than the prompt or the current context', async (t) => {
  const fits = ({ numCtx, numParallel }: ContextPlan): boolean => numCtx * numParallel <= 32_768
  t.same(planContext({ promptTokens: 12_000, reply: 20_000, current, trained: 65_536, fits }), { numCtx: 32_768, numParallel: 1 })
  const tight = ({ numCtx, numParallel }: ContextPlan): boolean => numCtx * numParallel <= 16_384
  t.same(planContext({ promptTokens: 9000, reply: 20_000, current, trained: 65_536, fits: tight }), { numCtx: 16_384, numParallel: 1 }, 'the reply gets less room where the memory says so')
})
