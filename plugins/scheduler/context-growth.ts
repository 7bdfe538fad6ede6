import type { Logger } from '../../core/base/logger.js'
import type { ResolvedOptions } from '../../core/config/request-options.js'
import { planContext, type ContextPlan } from './context-fit.js'
import type { Instance } from './instance.js'
import type { FitResult } from '../leases/lease.js'
import { estimateInstanceBytes } from './memory-estimate.js'

/**
 * Contexts grown for prompts that did not fit: a model's later loads that fix no num_ctx (nor num_parallel) get at
 * least the context its longest prompt needed, up to its trained context and what the memory holds.
 */
export class ContextGrowth {
  private readonly floors = new Map<string, ContextPlan>()

  constructor (private readonly log: Pick<Logger, 'info'>) {}

  /** The grown context that applies to a request: one that fixes num_ctx (or num_parallel) itself keeps its own. */
  floorFor (model: string, resolved: ResolvedOptions): ContextPlan | undefined {
    const floor = this.floors.get(model)
    if (!floor || resolved.loadRequested.num_ctx !== undefined || resolved.loadRequested.num_parallel !== undefined) return undefined
    return floor.numCtx > resolved.load.num_ctx ? floor : undefined
  }

  /**
   * After the runtime refused a prompt as longer than the instance's context: unless the request fixed num_ctx, the
   * model's later loads get a context that holds the prompt and its reply (context-fit.ts), within `budget` (the
   * bytes its KV cache may take). The next acquire then loads it; the smaller instance drains once it has.
   */
  async fit (instance: Instance, resolved: ResolvedOptions, promptTokens: number, budget: () => Promise<number>): Promise<FitResult> {
    const { model, options } = instance
    if (resolved.loadRequested.num_ctx !== undefined) return { grown: false, limit: options.num_ctx, why: ' (the request set num_ctx)' }
    const bytes = await budget()
    const plan = planContext({
      promptTokens,
      reply: Number(resolved.sampling.max_tokens ?? -1),
      current: { numCtx: options.num_ctx, numParallel: options.num_parallel },
      trained: model.gguf?.context_length,
      fits: ({ numCtx, numParallel }) => estimateInstanceBytes(model, numCtx * numParallel, options.cache_type_k, options.cache_type_v) - model.size <= bytes,
    })
    if ('limit' in plan) return { grown: false, limit: plan.limit, why: plan.why }
    const known = this.floors.get(model.name)
    if (!known || plan.numCtx > known.numCtx) this.floors.set(model.name, plan)
    this.log.info({ model: model.name, promptTokens, from: options.num_ctx, to: plan.numCtx, parallel: plan.numParallel }, 'a prompt longer than the context: loading the model with a larger one')
    return { grown: true, contextLength: plan.numCtx }
  }
}
