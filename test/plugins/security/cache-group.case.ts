// Which prompt-cache group a request is in: its key's (the keys file's cache_group, else its own name), split further
// by its own cache_salt; one group in all shares as a server without keys does.
import { join } from 'node:path'
import t from 'tap'
import { BadRequestError } from '../../../core/base/errors.js'
import { checkKeysFile, hashSecret, KeysFileError, writeKeysFile, type KeyEntry } from '../../../plugins/security/keys-file.js'
import { cacheGroupOf } from '../../../plugins/security/cache-group.js'
import { KeyRing } from '../../../plugins/security/key-ring.js'
import { cacheGroupFields, cacheSalt } from '../../../plugins/leases/lease-terms.js'
import { tempDir } from '../../helpers/app.js'

const quiet = { info: () => {}, error: () => {} }
const entry = (name: string, more: Partial<KeyEntry> = {}): KeyEntry => ({ name, hash: hashSecret(`secret-${name}`), scopes: ['infer'], models: ['*'], limits: {}, created: '', ...more })

async function ring (entries: KeyEntry[], configKeys: string[] = []): Promise<KeyRing> {
  const file = join(await tempDir(t), 'keys.yaml')
  await writeKeysFile(file, { keys: entries })
  return new KeyRing(configKeys, file, quiet)
}

const groupOf = (keys: KeyRing, name: string): string | null | undefined => {
  const found = keys.check(`secret-${name}`)
  return found !== null && 'grant' in found ? found.grant.cacheGroup : undefined
}

t.test('a key\'s group is its cache_group, else its own name; with one group in all, none', async (t) => {
  const teams = await ring([entry('alice', { cache_group: 'red' }), entry('carol', { cache_group: 'red' }), entry('bob')])
  t.equal(groupOf(teams, 'alice'), 'red')
  t.equal(groupOf(teams, 'carol'), 'red')
  t.equal(groupOf(teams, 'bob'), 'bob', 'no cache_group: a group of its own')
  t.equal(groupOf(await ring([entry('solo')]), 'solo'), null, 'a single key: nothing to keep apart')
  t.equal(groupOf(await ring([entry('a', { cache_group: 'team' }), entry('b', { cache_group: 'team' })]), 'a'), null, 'keys that all name one team share as keys off do')
  t.equal(groupOf(await ring([entry('a', { cache_group: 'team' }), entry('gone', { revoked: '2025-01-01T00:00:00Z' })]), 'a'), null, 'a revoked key is in no group')
  const withConfig = await ring([entry('a')], ['config-secret'])
  t.equal(groupOf(withConfig, 'a'), 'a', 'config.yaml\'s keys are groups of their own')
  const config = withConfig.check('config-secret')
  t.equal(config !== null && 'grant' in config ? config.grant.cacheGroup : undefined, 'config-1')
})

t.test('the keys file checks cache_group as it checks names', async (t) => {
  t.throws(() => checkKeysFile('keys.yaml', { keys: [{ ...entry('a'), cache_group: 'red team' }] }), KeysFileError)
  t.throws(() => checkKeysFile('keys.yaml', { keys: [{ ...entry('a'), cache_group: 7 }] }), /keys\[0\] \(a\)\.cache_group: 1-64 characters/)
  t.same(checkKeysFile('keys.yaml', { keys: [{ ...entry('a'), cache_group: 'red' }] }).keys[0]!.cache_group, 'red')
})

t.test('a request\'s cache_salt narrows its key\'s group and never names another', async (t) => {
  t.equal(cacheGroupOf('red', {}), 'red')
  t.equal(cacheGroupOf(null, { messages: [] }), undefined, 'no group, no salt: the shared one')
  t.equal(cacheGroupOf(undefined, { cache_salt: '' }), undefined, 'an empty salt is none (vLLM\'s default)')
  t.equal(cacheGroupOf('red', { cache_salt: 'user-1' }), 'red\u0000user-1')
  t.equal(cacheGroupOf(null, { cache_salt: 'user-1' }), '\u0000user-1', 'keys off: the salt alone splits')
  t.not(cacheGroupOf('bob', { cache_salt: 'red' }), cacheGroupOf('red', {}), 'a salt naming another group is still within its own')
  t.not(cacheGroupOf(null, { cache_salt: 'red' }), 'red')
  t.throws(() => cacheGroupOf('red', { cache_salt: 42 }), BadRequestError)
  t.throws(() => cacheGroupOf('red', { cache_salt: 'x'.repeat(257) }), /at most 256 characters/)
})

t.test('what a lease sends: the group\'s salt, or no reuse at all on a runtime that cannot keep salts apart', async (t) => {
  t.equal(cacheGroupFields(undefined, true), null, 'no group: nothing added')
  t.same(cacheGroupFields('red', true), { cache_salt: cacheSalt('red') })
  t.match(cacheSalt('red'), /^[0-9a-f]{32}$/, 'a digest: the group\'s name is not sent')
  t.not(cacheSalt('red'), cacheSalt('blue'))
  t.same(cacheGroupFields('red', false), { cache_prompt: false }, 'an unpatched build: nothing reused, nothing learned')
})
