// A credential type of one's own: a signed token (a JWT, HS256) checked against a key set, in
// `Authorization: Bearer <token>` or `x-api-key`, asked before the API key check. Its header's `kid` names the key
// it was signed with; its claims say what it grants, as a key's entry in the keys file does: `sub` (the name its
// usage is counted under), `scopes`, `models`, optional `limits`; `exp` is required. Anything that is not such a token
// (an API key) is left to the key check. Compile it to JavaScript (tsc) and install the package beside config.yaml:
//
//   plugins:
//     - path: llamagate-plugin-signed-token
//       options: { keys: { team-2026: <a secret of 32 characters or more> } }
import { createHmac, timingSafeEqual } from 'node:crypto'
import { definePlugin, Type, UnauthorizedError, type AuthGrant, type Scope } from 'llamagate/plugin'

const TOKEN = /^([\w-]+)\.([\w-]+)\.([\w-]+)$/
const SCOPES: readonly string[] = ['infer', 'manage', 'admin']

/** A token part's JSON object, or null when it is none. */
function decode (part: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'))
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? value as Record<string, unknown> : null
  } catch {
    return null
  }
}

function isList (value: unknown, allowed?: readonly string[]): value is string[] {
  return Array.isArray(value) && value.every((v) => typeof v === 'string' && (allowed === undefined || allowed.includes(v)))
}

export default definePlugin({
  name: 'signed-token',
  options: Type.Object({
    // The key set: each key id (a token header's `kid`) with its secret.
    keys: Type.Record(Type.String({ minLength: 1 }), Type.String({ minLength: 32 }), { minProperties: 1 }),
    // Seconds a token may be used past its `exp` (clocks drift apart).
    leeway: Type.Integer({ minimum: 0, default: 30 }),
  }, { additionalProperties: false }),
  register (app, options) {
    app.authenticators.add({
      name: 'signed-token',
      authenticate (request): AuthGrant | undefined {
        const bearer = /^Bearer\s+(.+)$/i.exec(request.headers.authorization ?? '')?.[1]
        const header = request.headers['x-api-key']
        const parts = TOKEN.exec((bearer ?? (typeof header === 'string' ? header : '')).trim())
        const head = parts === null ? null : decode(parts[1]!)
        if (parts === null || head === null) return undefined
        const [, head64, claims64, signature] = parts
        const kid = head.kid
        const secret = typeof kid === 'string' && Object.hasOwn(options.keys, kid) ? options.keys[kid] : undefined
        if (head.alg !== 'HS256' || secret === undefined) throw new UnauthorizedError('invalid token: not signed (HS256) by a known key id')
        const expected = createHmac('sha256', secret).update(`${head64}.${claims64}`).digest()
        const given = Buffer.from(signature!, 'base64url')
        if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw new UnauthorizedError('invalid token: bad signature')
        const claims = decode(claims64!)
        if (typeof claims?.exp !== 'number') throw new UnauthorizedError('invalid token: it has no exp')
        if (claims.exp + options.leeway < Date.now() / 1000) throw new UnauthorizedError('the token has expired')
        const { sub, scopes, models, limits } = claims
        if (typeof sub !== 'string' || sub === '' || !isList(scopes, SCOPES) || !isList(models)) {
          throw new UnauthorizedError('invalid token: its claims need sub, scopes (infer, manage, admin) and models')
        }
        return {
          name: sub,
          scopes: scopes as Scope[],
          models,
          ...(typeof limits === 'object' && limits !== null ? { limits: limits as AuthGrant['limits'] } : {}),
        }
      },
    })
  },
})
