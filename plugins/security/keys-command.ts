import { mkdir } from 'node:fs/promises'
import { dirname } from 'node:path'
import type { Command, OptionValues } from '../../core/cli/commands/command.js'
import { relativeTime, table } from '../../core/cli/commands/human.js'
import { UsageError } from '../../core/platform/usage-error.js'
import type { Priority } from '../../core/base/priority.js'
import type { KeyEntry, KeyLimits, KeysFile, Scope } from './keys-file.js'

type Action = 'add' | 'list' | 'revoke'

/** The flags each action takes besides --config; any other is refused rather than silently ignored. */
const ACTION_FLAGS: Record<Action, readonly string[]> = {
  add: ['scope', 'models', 'concurrent', 'rpm', 'tokens-per-day', 'queue-share', 'cache-group', 'priority', 'max-priority'],
  list: ['json'],
  revoke: [],
}

/** The limit flags, by the keys file's name for each. */
const LIMIT_FLAGS: Record<keyof KeyLimits, string> = {
  concurrent: 'concurrent', requests_per_minute: 'rpm', tokens_per_day: 'tokens-per-day', queue_share: 'queue-share',
}

/**
 * Hands out, lists and revokes the keys of the keys file (auth.keys_file). It edits the file itself, server or
 * not: a running server re-reads it on its next request.
 */
export const keysCommand: Command = {
  name: 'keys',
  summary: 'hand out API keys with scopes, models and limits; list and revoke them',
  usage: [
    'llamagate keys add <name> [--scope LIST] [--models LIST] [--concurrent N] [--rpm N] [--tokens-per-day N] [--queue-share F] [--cache-group NAME] [--priority CLASS] [--max-priority CLASS]',
    'llamagate keys list [--json]',
    'llamagate keys revoke <name>',
  ],
  flags: [
    '--scope LIST          add: what the key may do, comma-separated (default: infer):',
    '                        infer  chat, generate, embed, rerank',
    '                        manage pull, create, copy, delete, stop, import',
    '                        admin  metrics, runtimes, RPC workers, everyone\'s usage',
    '--models LIST         add: the models it may use, comma-separated names, aliases or * patterns',
    '                      such as \'acme/*,coder\' (default: *, every model)',
    '--concurrent N        add: its requests running or waiting at once',
    '--rpm N               add: its requests per minute',
    '--tokens-per-day N    add: prompt plus generated tokens per UTC day',
    '--queue-share F       add: the part (0-1] of a model\'s queue its waiting requests may fill',
    '--cache-group NAME    add: the team whose keys may reuse each other\'s prompt caches (default: the',
    '                      key\'s own name: it shares with no other key)',
    '--priority CLASS      add: its requests\' class when they ask none: background, interactive (default) or high',
    '--max-priority CLASS  add: the highest class its requests may ask for (default: interactive, or --priority if higher)',
    '--json                list: the entries as JSON (never the hashes)',
    '--config FILE         config file naming the keys file, auth.keys_file (default: $LLAMAGATE_CONFIG, else the shipped one)',
    'add prints the new secret alone on stdout, once (KEY=$(llamagate keys add bob)); only its hash is kept.',
    'revoke keeps the entry, so that the name stays taken and its usage stays attributed.',
    'A running server applies each change on its next request, no restart needed.',
  ],
  options: {
    config: { type: 'string' },
    scope: { type: 'string' },
    models: { type: 'string' },
    concurrent: { type: 'string' },
    rpm: { type: 'string' },
    'tokens-per-day': { type: 'string' },
    'queue-share': { type: 'string' },
    'cache-group': { type: 'string' },
    priority: { type: 'string' },
    'max-priority': { type: 'string' },
    json: { type: 'boolean' },
  },
  positionals: { min: 1, max: 2 },
  positionalsHint: 'expected add <name>, list or revoke <name>',
  async run ({ values, positionals, stdout, stderr }) {
    const [action, name] = positionals as [string, string | undefined]
    if (!Object.hasOwn(ACTION_FLAGS, action)) throw new UsageError(`unknown action "${action}": expected add, list or revoke`)
    const stray = Object.keys(values).filter((flag) => values[flag] !== undefined && flag !== 'config' && flag !== 'help' && !ACTION_FLAGS[action as Action].includes(flag))
    if (stray.length > 0) throw new UsageError(`--${stray[0]} is not a flag of keys ${action}`)
    if ((action === 'list') !== (name === undefined)) throw new UsageError(action === 'list' ? 'keys list takes no name' : `keys ${action} needs the key's name`)
    // Loaded here, not at the top: every command of the CLI loads this manifest to start.
    const { loadConfigAndPlugins } = await import('../../core/platform/plugin-manifests.js')
    const keysFile = await import('./keys-file.js')
    const file = (await loadConfigAndPlugins({ config: values.config as string | undefined })).config.auth.keysFile
    try {
      if (action === 'list') return list(keysFile.readKeysFile(file), file, values.json === true, stdout)
      if (action === 'revoke') return await revoke(keysFile, file, name!, stdout, stderr)
      return await add(keysFile, file, newEntry(keysFile, name!, values), stdout, stderr)
    } catch (err) {
      if (!(err instanceof keysFile.KeysFileError)) throw err
      stderr.write(`llamagate keys: ${err.message}\nNothing was changed; fix the file by hand first.\n`)
      return 1
    }
  },
}

type KeysFileModule = typeof import('./keys-file.js')

async function add (keysFile: KeysFileModule, file: string, entry: Omit<KeyEntry, 'hash'>, stdout: NodeJS.WriteStream, stderr: NodeJS.WriteStream): Promise<number> {
  return locked(file, async () => {
    const contents = keysFile.readKeysFile(file)
    const taken = find(contents, entry.name)
    if (taken !== undefined) {
      stderr.write(`llamagate keys: a key named "${taken.name}" already exists${taken.revoked !== undefined ? ' (revoked; a name is never reused, so that its usage stays its own)' : ''}: choose another name\n`)
      return 2
    }
    const secret = keysFile.newSecret()
    contents.keys.push({ ...entry, hash: keysFile.hashSecret(secret) })
    await keysFile.writeKeysFile(file, contents)
    stdout.write(`${secret}\n`)
    stderr.write(`added the key "${entry.name}" (scopes ${entry.scopes.join(',')}; models ${entry.models.join(',')}) to ${file}.\n` +
      'Its secret, above, is not shown again: only its hash is kept. Clients send it as "Authorization: Bearer <secret>".\n')
    return 0
  })
}

async function revoke (keysFile: KeysFileModule, file: string, name: string, stdout: NodeJS.WriteStream, stderr: NodeJS.WriteStream): Promise<number> {
  return locked(file, async () => {
    const contents = keysFile.readKeysFile(file)
    const known = find(contents, name)
    if (known === undefined) {
      stderr.write(`llamagate keys: no key named "${name}" in ${file}\n`)
      return 1
    }
    if (known.revoked !== undefined) {
      stdout.write(`the key "${known.name}" was already revoked (${known.revoked})\n`)
      return 0
    }
    known.revoked = new Date().toISOString()
    await keysFile.writeKeysFile(file, contents)
    stdout.write(`revoked the key "${known.name}": refused from the server's next request on; its entry stays in ${file}, its name taken\n`)
    return 0
  })
}

/** Names are unique regardless of case (the keys file's check says so). */
function find (contents: KeysFile, name: string): KeyEntry | undefined {
  return contents.keys.find((k) => k.name.toLowerCase() === name.toLowerCase())
}

/** The entry `keys add` makes from its flags (its hash comes once the name is known to be free). */
function newEntry (keysFile: KeysFileModule, name: string, values: OptionValues): Omit<KeyEntry, 'hash'> {
  if (!keysFile.validName(name)) throw new UsageError(`"${name}" is not a key name: 1-64 characters of A-Z a-z 0-9 . _ -, starting with a letter or digit (anonymous and config-N are reserved)`)
  const scopes = listFlag(values, 'scope') ?? ['infer']
  const unknown = scopes.find((s) => !keysFile.SCOPES.includes(s as Scope))
  if (unknown !== undefined) throw new UsageError(`--scope: unknown scope "${unknown}" (known: ${keysFile.SCOPES.join(', ')})`)
  const limits: KeyLimits = {}
  for (const [key, flag] of Object.entries(LIMIT_FLAGS) as Array<[keyof KeyLimits, string]>) {
    const text = values[flag] as string | undefined
    if (text === undefined) continue
    const value = Number(text)
    const share = key === 'queue_share'
    const valid = /^\s*\d*\.?\d+\s*$/.test(text) && value > 0 && (share ? value <= 1 : Number.isSafeInteger(value))
    if (!valid) throw new UsageError(`--${flag} ${JSON.stringify(text)}: expected ${share ? 'a number above 0, at most 1 (0.25: a quarter of the queue)' : 'a whole number above 0'}`)
    limits[key] = value
  }
  const group = values['cache-group'] as string | undefined
  if (group !== undefined && !keysFile.validName(group)) throw new UsageError(`--cache-group "${group}": 1-64 characters of A-Z a-z 0-9 . _ -, starting with a letter or digit`)
  const classes: Pick<KeyEntry, 'priority' | 'max_priority'> = {}
  for (const [field, flag] of [['priority', 'priority'], ['max_priority', 'max-priority']] as const) {
    const text = values[flag] as string | undefined
    if (text === undefined) continue
    if (!keysFile.PRIORITIES.includes(text as Priority)) throw new UsageError(`--${flag} "${text}": one of ${keysFile.PRIORITIES.join(', ')}`)
    classes[field] = text as Priority
  }
  return { name, scopes: [...new Set(scopes as Scope[])], models: listFlag(values, 'models') ?? ['*'], limits, ...(group !== undefined ? { cache_group: group } : {}), ...classes, created: new Date().toISOString() }
}

/** A comma-separated flag's items; undefined when it was not given. */
function listFlag (values: OptionValues, flag: string): string[] | undefined {
  const text = values[flag] as string | undefined
  if (text === undefined) return undefined
  const items = text.split(',').map((s) => s.trim()).filter((s) => s !== '')
  if (items.length === 0) throw new UsageError(`--${flag} is empty: give at least one, comma-separated`)
  return items
}

function list (contents: KeysFile, file: string, json: boolean, stdout: NodeJS.WriteStream): number {
  // The hashes stay in the file: a listing gets pasted into tickets and chats.
  const entries = contents.keys.map(({ hash: _hash, ...entry }) => entry)
  if (json) {
    stdout.write(`${JSON.stringify({ file, keys: entries }, null, 2)}\n`)
    return 0
  }
  if (entries.length === 0) {
    stdout.write(`no API keys in ${file} yet (llamagate keys add <name> makes one)\n`)
    return 0
  }
  stdout.write(table(['NAME', 'SCOPES', 'MODELS', 'LIMITS', 'CACHE GROUP', 'PRIORITY', 'CREATED', 'REVOKED'], entries.map((e) => [
    e.name, e.scopes.join(','), e.models.join(','), describeLimits(e.limits), e.cache_group ?? e.name, describePriority(e), e.created ? relativeTime(e.created) : '-', e.revoked ? relativeTime(e.revoked) : '-',
  ])))
  return 0
}

/** A key's class, and the highest it may ask for where that is another. */
function describePriority (entry: Pick<KeyEntry, 'priority' | 'max_priority'>): string {
  const own = entry.priority ?? 'interactive'
  return entry.max_priority !== undefined && entry.max_priority !== own ? `${own} (up to ${entry.max_priority})` : own
}

function describeLimits (limits: KeyLimits): string {
  const parts = [
    limits.concurrent !== undefined ? `${limits.concurrent} at once` : '',
    limits.requests_per_minute !== undefined ? `${limits.requests_per_minute}/min` : '',
    limits.tokens_per_day !== undefined ? `${limits.tokens_per_day} tokens/day` : '',
    limits.queue_share !== undefined ? `${limits.queue_share} of queue` : '',
  ].filter((p) => p !== '')
  return parts.length > 0 ? parts.join(', ') : 'none'
}

/** Runs a read-change-write of the keys file under a lock beside it: two `keys add` at once both land. */
async function locked<T> (file: string, change: () => Promise<T>): Promise<T> {
  const { default: lockfile } = await import('proper-lockfile')
  await mkdir(dirname(file), { recursive: true })
  // A holder that died leaves the lock stale after 10 s; a live one holds it for milliseconds.
  const unlock = await lockfile.lock(file, { realpath: false, stale: 10_000, retries: { retries: 100, minTimeout: 20, maxTimeout: 200 } })
  try {
    return await change()
  } finally {
    await unlock()
  }
}
