/**
 * Decisions as a plugin asks them (`app.decisions.ask`): System One's request and answer shapes, which the decisions
 * plugin serves at `/v1/systemone` and hands to plugins (a guardrail asks a local decision model whether a request
 * may pass).
 */

/**
 * System One's request, less its model: the state, and the questions by id (`{type, instructions, criteria}`);
 * checked as /v1/systemone checks them.
 */
export interface SystemOneAsk {
  state?: unknown
  questions?: unknown
  images?: unknown
  [field: string]: unknown
}

/** A yes/no question's answer: the probability of yes. */
export type NoulAnswer = { type: 'noul', noul: number }
export type ChoiceAnswer = { type: 'choice', choice: string, probabilities: Record<string, number>, confidence: number }
export type ScoreAnswer = { type: 'score', score: number, legend: Record<string, unknown>, probabilities: Record<string, number>, confidence: number }
/** One question's answer, as llama.cpp's server gives it. */
export type SystemOneAnswer = NoulAnswer | ChoiceAnswer | ScoreAnswer

/** System One's answer, as llama.cpp's server gives it. */
export interface SystemOneReply {
  model: string
  answers: Record<string, SystemOneAnswer>
  usage: { input_tokens: number, output_tokens: 0 }
}

/** `app.decisions`: decisions on local models, leased like any request (keys, queue, quotas, swaps, usage). */
export interface DecisionAsker {
  /**
   * Asks `model` System One's questions, as `/v1/systemone` does; `signal` ends it. No call hook runs on it, so a
   * guardrail's own question is not judged by itself.
   * @throws what /v1/systemone answers: ModelNotFoundError, a 4xx for a model or questions it cannot take, the
   * lease's errors (queue full, quotas)
   */
  ask(call: { model: string, request: SystemOneAsk, signal: AbortSignal, keepAliveMs?: number }): Promise<SystemOneReply>
}
