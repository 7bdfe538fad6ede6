import { GatewayError } from '../../core/base/errors.js'

/**
 * A background request's place was taken back for a request of a higher class: its work stopped. OpenAI's answer to a
 * flex request without capacity (429 `resource_unavailable`), which its SDKs retry after a moment.
 */
export class PreemptedError extends GatewayError {
  constructor (retryAfterSeconds = 1) {
    super(429, 'background work (service_tier "flex") gave its place to a request of a higher class: try again in a moment', { code: 'resource_unavailable', headers: { 'Retry-After': String(retryAfterSeconds) } })
  }
}
