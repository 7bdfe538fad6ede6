import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { Static } from 'typebox'
import { ForbiddenError, NotFoundError } from '../../core/base/errors.js'
import type { Grant } from '../security/key-ring.js'
import type { UsageTotals } from './usage-book.js'
import type { UsageLedger } from './usage-ledger.js'
import { UsageQuery, UsageReply, type KeyUsage } from './schemas.js'

/** The name usage is counted under when keys are off. */
export const ANONYMOUS = 'anonymous'

export interface UsageRouteOptions {
  ledger: UsageLedger
  /** Whether a key of this name is known (the keys file or auth.api_keys), revoked ones included. */
  keyExists(name: string): boolean
  /** Another key's limits, for an admin asking (null: no key by that name, as with usage counted before a rename). */
  keyLimits(name: string): Static<typeof KeyUsage>['limits']
  /** The tokens a key's running requests hold reserved against its daily limit (plugins/quotas). */
  reservedBy(name: string): number
}

/**
 * GET /api/usage: a key's own usage, per model and today's tokens against its limits. With the admin scope (or keys
 * off) `?key=NAME` shows another key's and `?all=true` every key's.
 */
const usageRoute: FastifyPluginAsyncTypebox<UsageRouteOptions> = async (app, { ledger, keyExists, keyLimits, reservedBy }) => {
  app.get('/api/usage', {
    config: { scope: 'any' },
    schema: { querystring: UsageQuery, response: { 200: UsageReply } },
  }, async (request) => {
    const { grant } = request
    const own = grant?.name ?? ANONYMOUS
    const { key, all } = request.query
    const everyone = all === 'true'
    if ((everyone || (key !== undefined && key !== own)) && grant !== null && !grant.scopes.has('admin')) {
      throw new ForbiddenError(`the API key "${own}" may see only its own usage: another key's needs the "admin" scope`, 'permission_denied')
    }
    let names: string[]
    if (everyone) names = ledger.keys()
    else if (key === undefined || key === own) names = [own]
    else if (ledger.has(key) || keyExists(key)) names = [key]
    else throw new NotFoundError(`no API key named "${key}" and no usage counted under that name`)
    return { keys: names.map((name) => keyUsage(ledger, name, name === own ? limitsOf(grant) : keyLimits(name), reservedBy(name))) }
  })
}

// Without keys there are no limits.
function limitsOf (grant: Grant | null): Static<typeof KeyUsage>['limits'] {
  return grant === null ? {} : { ...grant.limits }
}

function keyUsage (ledger: UsageLedger, key: string, limits: Static<typeof KeyUsage>['limits'], reserved: number): Static<typeof KeyUsage> {
  const models = ledger.modelsOf(key)
  const sum: UsageTotals = { requests: 0, prompt_tokens: 0, cached_tokens: 0, generated_tokens: 0, queue_ms: 0, runtime_ms: 0 }
  for (const { totals } of models) for (const field of Object.keys(sum) as Array<keyof UsageTotals>) sum[field] += totals[field]
  return {
    key,
    today: { date: ledger.today(), tokens: ledger.tokensToday(key), reserved },
    limits,
    models: models.map(({ model, totals }) => ({ model, ...shown(totals) })),
    totals: shown(sum),
  }
}

function shown (totals: UsageTotals): UsageTotals {
  return { ...totals, queue_ms: Math.round(totals.queue_ms), runtime_ms: Math.round(totals.runtime_ms) }
}

export default usageRoute
