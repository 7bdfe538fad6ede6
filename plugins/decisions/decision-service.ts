import type { DecisionAsker, SystemOneAsk, SystemOneReply } from '../../core/platform/decision-asker.js'
import type { Logger } from '../../core/base/logger.js'
import { tokenCount } from '../../runtimes/index.js'
import type { RequestUsage } from '../../core/base/request-usage.js'
import type { Lease, LeaseSource } from '../leases/lease.js'
import { runLeased } from '../inference/run-leased.js'
import type { ModelRecord } from '../storage/model-record.js'
import { NotSupportedError } from './decision-errors.js'
import { systemOneAnswer } from './decision-math.js'
import type { DecisionAsk } from './decision-questions.js'
import { chatPrompts, systemOnePrompts, type PromptMaker } from './decision-prompts.js'
import { runDecision, type DecisionRun } from './decision-runner.js'
import { NEEDS_ENGINE, SCHEMES, type DecisionScheme } from './decision-schemes.js'
import { LabelTokens } from './label-tokens.js'
import { readSystemOne } from './systemone-request.js'

/** Where a decision's model is found, and how it is leased. */
export interface DecisionDeps {
  leases: LeaseSource
  /** The record of the model a request names (its kind, its decision metadata). @throws ModelNotFoundError */
  record(name: string): ModelRecord
}

/** One decision asked of a model, from a surface or a plugin. */
export interface DecisionCall {
  model: string
  ask: DecisionAsk
  keepAliveMs?: number
  /** Aborted when its caller goes away. */
  signal: AbortSignal
  usage?: RequestUsage
  log?: Pick<Logger, 'warn'>
}

export type { SystemOneAsk, SystemOneReply }

/** A decision's answer: its model's name, and what its questions came to. */
export interface DecisionResult extends DecisionRun { model: string }

/**
 * Decisions on local models: a decision model's answers read from its label logits as llama.cpp computes them, a chat
 * model's as vLLM reads them. Leased like any request (keys, queue, quotas, swaps, usage), on the model's generating
 * instance. One service for the surfaces (/v1/systemone, /v1/decisions) and for plugins (a guardrail).
 */
export class Decisions implements DecisionAsker {
  private readonly labels = new LabelTokens()

  constructor (private readonly deps: DecisionDeps) {}

  /**
   * How a model's questions are asked, before anything loads: its scheme (labels, option limits) and prompts.
   * @throws NotSupportedError for a model that answers no decisions here (an embedding model, a type that needs
   * engine heads, a file without its question template), ModelNotFoundError
   */
  makerFor (name: string): PromptMaker {
    const record = this.deps.record(name)
    if (record.upstream !== undefined) throw new NotSupportedError(`"${record.name}" is served by the upstream "${record.upstream}": its decisions are asked of that server as they came (Decisions.forward)`)
    if (record.kind === 'chat') return chatPrompts
    const info = record.gguf?.decision
    if (record.kind !== 'decision' || info == null) throw new NotSupportedError('This model is not a decision model')
    const scheme: DecisionScheme | undefined = SCHEMES[info.type]
    if (scheme === undefined) {
      const needs = NEEDS_ENGINE[info.type]
      throw new NotSupportedError(needs !== undefined
        ? `decision type "${info.type}" needs ${needs}, which this llama-server build cannot evaluate; serve it with a llama-server that answers /v1/systemone`
        : `decision type "${info.type}" is not one llamagate knows (openjev, lev, nimble, pplx-decider, lfm2-d1)`)
    }
    if (info.template === null) throw new NotSupportedError(`"${record.name}" is a decision model without a question template (tokenizer.chat_template.systemone)`)
    return systemOnePrompts(scheme, info.template, info.temperatures)
  }

  /**
   * Asks a model System One's questions, as `/v1/systemone` does: for a plugin (a guardrail asks a local decision
   * model whether a request may pass). Leased like any request; the caller's `signal` ends it.
   * @throws what /v1/systemone answers: NotSupportedError, ModelNotFoundError, the protocol's 422s and 413s, the
   * lease's errors (queue full, quotas)
   */
  async ask (call: Omit<DecisionCall, 'ask'> & { request: SystemOneAsk }): Promise<SystemOneReply> {
    if (this.upstream(call.model)) return await this.forward('/v1/systemone', call, (answer) => (answer as Partial<SystemOneReply>).usage?.input_tokens) as unknown as SystemOneReply
    const maker = this.makerFor(call.model)
    const ask = readSystemOne(call.request, { maxOptions: maker.scheme.maxLabels, noulTrueFirst: maker.scheme.noulTrueFirst, nullState: maker.scheme.groupsLabels === true })
    const { request: _request, ...rest } = call
    const result = await this.decide({ ...rest, ask }, maker)
    return {
      model: result.model,
      answers: Object.fromEntries(result.answers.map((a) => [a.question.id, systemOneAnswer(a)])),
      usage: { input_tokens: result.inputTokens, output_tokens: 0 },
    }
  }

  /** Whether `name` is an upstream's model: its decisions are asked of that server, as they came (forward). */
  upstream (name: string): boolean {
    return this.deps.record(name).upstream !== undefined
  }

  /**
   * A decision request for an upstream's model, sent to that server's `path` as it came (the upstream's client puts
   * the model's name there in it): its answer and its errors are the upstream's. Leased like any request.
   */
  async forward (path: '/v1/systemone' | '/v1/decisions', call: Omit<DecisionCall, 'ask'> & { request: Record<string, unknown> }, inputTokens: (answer: unknown) => unknown): Promise<Record<string, unknown>> {
    return this.leased(call, async (lease) => {
      const reply = await lease.endpoint.postJson<Record<string, unknown>>(path, { ...call.request, model: call.model }, lease.signal)
      lease.countTokens(tokenCount(inputTokens(reply), 'usage.input_tokens') ?? 0, 0)
      return reply
    })
  }

  /** Asks `call.ask` of its model, with the maker makerFor() gave for it. */
  async decide (call: DecisionCall, maker: PromptMaker): Promise<DecisionResult> {
    return this.leased(call, async (lease) => {
      const result = await runDecision(lease, maker, this.labels, call.ask)
      lease.countTokens(result.inputTokens, 0, Math.max(0, result.inputTokens - result.evaluatedTokens))
      return { ...result, model: lease.model.name }
    })
  }

  /** `work` on a lease of the call's model for decisions (its key's line, queue, quotas and usage). */
  private async leased<T> (call: Omit<DecisionCall, 'ask'>, work: (lease: Lease) => Promise<T>): Promise<T> {
    const done = await runLeased(this.deps.leases, {
      model: call.model,
      purpose: 'decide',
      signal: call.signal,
      stream: null,
      ...(call.keepAliveMs !== undefined ? { keepAliveMs: call.keepAliveMs } : {}),
      ...(call.usage !== undefined ? { usage: call.usage } : {}),
      ...(call.log !== undefined ? { log: call.log } : {}),
      work,
    })
    return done!
  }
}
