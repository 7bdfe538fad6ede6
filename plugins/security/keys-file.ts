import { createHash, randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { parse, stringify } from 'yaml'
import { SCOPES, type KeyLimits, type Scope } from '../../core/base/grant.js'
import { PRIORITIES, type Priority } from '../../core/base/priority.js'
import { writeWhole } from '../../core/base/write-whole.js'

/**
 * The keys file (`auth.keys_file`): one entry per API key a team hands out, with what it may do. Written by
 * `llamagate keys`, read (and re-read on change) by the security plugin. Only a hash of each secret is kept.
 */

// The core's (core/base/grant.ts): a plugin's credential type carries the same scopes and limits as a key.
export { PRIORITIES, SCOPES, type KeyLimits, type Scope }

export interface KeyEntry {
  name: string
  /** `sha256:<hex>` of the secret. */
  hash: string
  scopes: Scope[]
  /** Model names, `*` patterns or aliases it may use; `['*']`: every model. */
  models: string[]
  limits: KeyLimits
  /**
   * The keys whose prompts may share computed prompt caches (a team): keys in different groups never reuse each
   * other's, in memory or on disk. @default the key's own name: a group of one
   */
  cache_group?: string
  /**
   * The class its requests run at when they ask none (core/base/priority.ts): `background` for a key that only ever
   * does bulk work. @default interactive
   */
  priority?: Priority
  /** The highest class its requests may ask for (OpenAI's `service_tier: "priority"` is `high`). @default interactive, or `priority` if higher */
  max_priority?: Priority
  created: string
  /** When it was revoked (ISO time): it stays listed, refused. */
  revoked?: string
}

export interface KeysFile { keys: KeyEntry[] }

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/
const HASH = /^sha256:[0-9a-f]{64}$/
const LIMITS: Record<keyof KeyLimits, { integer: boolean, max?: number }> = {
  concurrent: { integer: true },
  requests_per_minute: { integer: true },
  tokens_per_day: { integer: true },
  queue_share: { integer: false, max: 1 },
}

export class KeysFileError extends Error {
  constructor (file: string, problems: string[]) {
    super(`keys file ${file}: ${problems.join('; ')}`)
    this.name = 'KeysFileError'
  }
}

/** The hash kept for a secret. Secrets are 32 random bytes, so one round of SHA-256 is enough. */
export function hashSecret (secret: string): string {
  return 'sha256:' + createHash('sha256').update(secret).digest('hex')
}

/** A new secret: `lg-` and 43 characters of base64url (256 bits). */
export function newSecret (): string {
  return 'lg-' + randomBytes(32).toString('base64url')
}

export function validName (name: string): boolean { return NAME.test(name) && !/^(anonymous|config-\d+)$/i.test(name) }

/** Reads and checks the keys file; an absent file is an empty one. @throws KeysFileError naming every problem */
export function readKeysFile (file: string): KeysFile {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { keys: [] }
    throw new KeysFileError(file, [(err as Error).message])
  }
  let raw: unknown
  try {
    raw = parse(text) ?? {}
  } catch (err) {
    throw new KeysFileError(file, [`not YAML: ${(err as Error).message.split('\n')[0]}`])
  }
  return checkKeysFile(file, raw)
}

export function checkKeysFile (file: string, raw: unknown): KeysFile {
  const problems: string[] = []
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new KeysFileError(file, ['expected a mapping with a "keys" list'])
  const list = (raw as { keys?: unknown }).keys ?? []
  if (!Array.isArray(list)) throw new KeysFileError(file, ['"keys" must be a list'])
  const names = new Set<string>()
  const keys: KeyEntry[] = []
  list.forEach((item: unknown, i) => {
    const at = `keys[${i}]`
    if (typeof item !== 'object' || item === null) { problems.push(`${at}: expected a mapping`); return }
    const e = item as Record<string, unknown>
    const name = e.name
    if (typeof name !== 'string' || !NAME.test(name)) { problems.push(`${at}.name: 1-64 characters of A-Z a-z 0-9 . _ -, starting with a letter or digit`); return }
    if (names.has(name.toLowerCase())) problems.push(`${at}.name: "${name}" is listed twice`)
    // Usage counted while keys are off goes under "anonymous"; config.yaml's keys are config-1, config-2...
    if (/^(anonymous|config-\d+)$/i.test(name)) problems.push(`${at}.name: "${name}" is reserved`)
    names.add(name.toLowerCase())
    if (typeof e.hash !== 'string' || !HASH.test(e.hash)) problems.push(`${at} (${name}).hash: expected sha256:<64 hex digits>`)
    const scopes = e.scopes ?? ['infer']
    if (!Array.isArray(scopes) || scopes.some((s) => !SCOPES.includes(s as Scope))) problems.push(`${at} (${name}).scopes: a list of ${SCOPES.join(', ')}`)
    const models = e.models ?? ['*']
    if (!Array.isArray(models) || models.some((m) => typeof m !== 'string' || m === '')) problems.push(`${at} (${name}).models: a list of model names, aliases or * patterns`)
    const limits = (e.limits ?? {}) as Record<string, unknown>
    if (typeof limits !== 'object' || limits === null) problems.push(`${at} (${name}).limits: expected a mapping`)
    else {
      for (const [k, v] of Object.entries(limits)) {
        // Own keys only: `toString: 5` is no limit, whatever Object's prototype holds.
        const rule = Object.hasOwn(LIMITS, k) ? LIMITS[k as keyof KeyLimits] : undefined
        if (rule === undefined) { problems.push(`${at} (${name}).limits.${k}: unknown (known: ${Object.keys(LIMITS).join(', ')})`); continue }
        if (typeof v !== 'number' || !(v > 0) || (rule.integer && !Number.isInteger(v)) || (rule.max !== undefined && v > rule.max)) {
          problems.push(`${at} (${name}).limits.${k}: ${rule.integer ? 'a whole number above 0' : `a number above 0, at most ${rule.max}`}`)
        }
      }
    }
    const group = e.cache_group
    if (group !== undefined && (typeof group !== 'string' || !NAME.test(group))) problems.push(`${at} (${name}).cache_group: 1-64 characters of A-Z a-z 0-9 . _ -, starting with a letter or digit`)
    for (const field of ['priority', 'max_priority'] as const) {
      if (e[field] !== undefined && !PRIORITIES.includes(e[field] as Priority)) problems.push(`${at} (${name}).${field}: one of ${PRIORITIES.join(', ')}`)
    }
    keys.push({
      name,
      hash: String(e.hash),
      scopes: [...new Set(scopes as Scope[])],
      models: models as string[],
      limits: limits as KeyLimits,
      ...(typeof group === 'string' ? { cache_group: group } : {}),
      ...(typeof e.priority === 'string' ? { priority: e.priority as Priority } : {}),
      ...(typeof e.max_priority === 'string' ? { max_priority: e.max_priority as Priority } : {}),
      created: typeof e.created === 'string' ? e.created : '',
      ...(typeof e.revoked === 'string' ? { revoked: e.revoked } : {}),
    })
  })
  if (problems.length > 0) throw new KeysFileError(file, problems)
  return { keys }
}

const HEADER = '# API keys of this llamagate, written by `llamagate keys` (add, list, revoke). Only hashes of the secrets\n' +
  '# are kept; the server re-reads this file when it changes. docs/operations.md, "A team setup".\n'

/** Writes the keys file whole (a temporary file renamed over it, mode 600): a reader sees the old or the new. */
export async function writeKeysFile (file: string, contents: KeysFile): Promise<void> {
  checkKeysFile(file, contents)
  await writeWhole(file, HEADER + stringify(contents), 0o600)
}
