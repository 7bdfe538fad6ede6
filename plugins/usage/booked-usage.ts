import type { RequestUsage } from '../../core/base/request-usage.js'
import type { UsedModel } from './usage-ledger.js'

/**
 * What one request is booked for once its reply is over, however it ended. An answer that reported its counts is
 * booked with them. One cut short (the client gone, the runtime failed or stopped) never said them: it is booked with
 * its prompt as estimated at the door and what it was sent of a streamed answer; of a whole answer nothing was seen
 * before the cut, so it is booked with the most it may have generated (its daily limit's reservation; 0 without one).
 */
export function bookedUsage (usage: RequestUsage): UsedModel {
  const counted = usage.counted === true
  return {
    promptTokens: counted ? usage.promptTokens : usage.promptEstimate ?? 0,
    cachedTokens: counted ? usage.cachedTokens ?? 0 : 0,
    generatedTokens: counted ? usage.generatedTokens : usage.sentTokens ?? usage.tokenCap ?? 0,
    queueMs: usage.queueMs ?? 0,
    runtimeMs: usage.runtimeMs ?? 0,
  }
}
