import { existsSync } from 'node:fs'
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { hashSecret, readKeysFile } from '../../../plugins/security/keys-file.js'
import { tempDir } from '../../helpers/app.js'
import { runCli, runCliHere } from '../../helpers/serve-process.js'

type Test = Parameters<typeof tempDir>[0]

/** A config.yaml whose data_dir is a fresh folder, and where its keys file is by default. */
async function setup (t: Test, extra = ''): Promise<{ config: string, dataDir: string, keys: string }> {
  const dir = await tempDir(t)
  const dataDir = join(dir, 'data')
  const config = join(dir, 'config.yaml')
  await writeFile(config, `data_dir: ${dataDir}\n${extra}`)
  return { config, dataDir, keys: join(dataDir, 'keys.yaml') }
}

t.test('add prints the secret alone, once; list never shows it; revoke keeps the entry', async (t) => {
  const { config, keys } = await setup(t)
  const before = Date.now()
  const bob = await runCli(['keys', 'add', 'bob', '--config', config])
  t.equal(bob.code, 0, bob.stderr)
  t.match(bob.stdout, /^lg-[A-Za-z0-9_-]{43}\n$/, 'stdout is the secret and a newline: KEY=$(llamagate keys add bob) works')
  const secret = bob.stdout.trim()
  t.match(bob.stderr, /added the key "bob" \(scopes infer; models \*\) to .*keys\.yaml\.\nIts secret, above, is not shown again/)
  const [entry] = readKeysFile(keys).keys
  t.same(entry, { name: 'bob', hash: hashSecret(secret), scopes: ['infer'], models: ['*'], limits: {}, created: entry!.created }, 'defaults: infer, every model, no limits')
  t.ok(Date.parse(entry!.created) >= before - 1000 && Date.parse(entry!.created) <= Date.now(), `created is now (${entry!.created})`)
  t.notMatch(await readFile(keys, 'utf8'), secret, 'the file keeps only the hash')
  t.equal((await stat(keys)).mode & 0o777, 0o600, 'the file is for its owner only')

  const carol = await runCliHere(['keys', 'add', 'carol', '--config', config, '--scope', 'infer, manage,admin', '--models', 'acme/*,coder',
    '--concurrent', '2', '--rpm', '60', '--tokens-per-day', '100000', '--queue-share', '0.25', '--cache-group', 'red-team',
    '--priority', 'background', '--max-priority', 'high'])
  t.equal(carol.code, 0, carol.stderr)
  t.not(carol.stdout.trim(), secret, 'each key has its own secret')
  t.same(readKeysFile(keys).keys[1], {
    name: 'carol', hash: hashSecret(carol.stdout.trim()), scopes: ['infer', 'manage', 'admin'], models: ['acme/*', 'coder'],
    limits: { concurrent: 2, requests_per_minute: 60, tokens_per_day: 100000, queue_share: 0.25 }, cache_group: 'red-team',
    priority: 'background', max_priority: 'high', created: readKeysFile(keys).keys[1]!.created,
  })
  const badClass = await runCliHere(['keys', 'add', 'dave', '--config', config, '--priority', 'urgent'])
  t.equal(badClass.code, 2, 'an unknown class is bad usage')
  t.match(badClass.stderr, /--priority "urgent": one of background, interactive, high/)

  const table = await runCliHere(['keys', 'list', '--config', config])
  t.equal(table.code, 0)
  const lines = table.stdout.trimEnd().split('\n')
  t.match(lines[0], /^NAME +SCOPES +MODELS +LIMITS +CACHE GROUP +PRIORITY +CREATED +REVOKED$/)
  t.match(lines[1], /^bob +infer +\* +none +bob +interactive +(now|\d+ seconds? ago) +-$/, 'a key\'s cache group is its own name unless given; its class interactive')
  t.match(lines[2], /^carol +infer,manage,admin +acme\/\*,coder +2 at once, 60\/min, 100000 tokens\/day, 0\.25 of queue +red-team +background \(up to high\) +/)
  const listed = (await runCliHere(['keys', 'list', '--json', '--config', config])).stdout
  for (const shown of [table.stdout, listed]) {
    t.notMatch(shown, secret, 'no secret in a listing')
    t.notMatch(shown, carol.stdout.trim())
    t.notMatch(shown, /sha256:/, 'nor a hash')
  }
  const json = JSON.parse(listed)
  t.equal(json.file, keys)
  t.same(json.keys.map((k: { name: string }) => k.name), ['bob', 'carol'])
  t.same(json.keys[1].limits, { concurrent: 2, requests_per_minute: 60, tokens_per_day: 100000, queue_share: 0.25 })
  t.notOk('hash' in json.keys[0], 'the JSON entries have no hash')

  const revoked = await runCliHere(['keys', 'revoke', 'bob', '--config', config])
  t.equal(revoked.code, 0, revoked.stderr)
  t.match(revoked.stdout, /revoked the key "bob"/)
  const after = readKeysFile(keys).keys
  t.equal(after.length, 2, 'the entry stays')
  t.ok(Date.parse(after[0]!.revoked!) >= Date.parse(after[0]!.created), `revoked is a time (${after[0]!.revoked})`)
  t.equal(after[0]!.hash, hashSecret(secret), 'its hash stays: the server names it when it refuses it')
  t.notMatch((await runCliHere(['keys', 'list', '--config', config])).stdout.split('\n')[1], / -$/, 'list shows when it was revoked')
  const text = await readFile(keys, 'utf8')
  const again = await runCliHere(['keys', 'revoke', 'bob', '--config', config])
  t.equal(again.code, 0, 'revoking twice is no error')
  t.equal(again.stdout, `the key "bob" was already revoked (${after[0]!.revoked})\n`)
  t.equal(await readFile(keys, 'utf8'), text, 'and changes nothing')
  const unknown = await runCliHere(['keys', 'revoke', 'nobody', '--config', config])
  t.equal(unknown.code, 1)
  t.match(unknown.stderr, /^llamagate keys: no key named "nobody" in .*keys\.yaml\n$/)

  for (const name of ['bob', 'BOB', 'Carol']) {
    const taken = await runCliHere(['keys', 'add', name, '--config', config])
    t.equal(taken.code, 2, `${name}: taken`)
    t.equal(taken.stdout, '', 'no secret printed')
    t.match(taken.stderr, new RegExp(`a key named "${name.toLowerCase()}" already exists${name === 'Carol' ? ':' : ' \\(revoked; a name is never reused'}`))
  }
  t.equal(await readFile(keys, 'utf8'), text, 'a refused add writes nothing')
})

t.test('refused flags and names: exit 2 with the reason, and no file written', async (t) => {
  const { config, keys } = await setup(t)
  const cases: Array<[string[], RegExp]> = [
    [['add', 'bad name'], /"bad name" is not a key name: 1-64 characters of A-Z a-z 0-9 \. _ -, starting with a letter or digit/],
    [['add', 'bob', '--scope', 'infer,root'], /--scope: unknown scope "root" \(known: infer, manage, admin\)/],
    [['add', 'bob', '--scope', ' , '], /--scope is empty/],
    [['add', 'bob', '--models', ''], /--models is empty/],
    [['add', 'bob', '--concurrent', '0'], /--concurrent "0": expected a whole number above 0/],
    [['add', 'bob', '--rpm', '1.5'], /--rpm "1\.5": expected a whole number above 0/],
    [['add', 'bob', '--tokens-per-day=-3'], /--tokens-per-day "-3": expected a whole number above 0/],
    [['add', 'bob', '--tokens-per-day', 'lots'], /--tokens-per-day "lots"/],
    [['add', 'bob', '--queue-share', '1.5'], /--queue-share "1\.5": expected a number above 0, at most 1/],
    [['add', 'bob', '--cache-group', 'red team'], /--cache-group "red team": 1-64 characters of A-Z a-z 0-9 \. _ -/],
    [['add'], /keys add needs the key's name/],
    [['revoke'], /keys revoke needs the key's name/],
    [['list', 'bob'], /keys list takes no name/],
    [['list', '--rpm', '3'], /--rpm is not a flag of keys list/],
    [['revoke', 'bob', '--json'], /--json is not a flag of keys revoke/],
    [['rotate', 'bob'], /unknown action "rotate": expected add, list or revoke/],
    [[], /expected add <name>, list or revoke <name>/],
  ]
  for (const [args, message] of cases) {
    const run = await runCliHere(['keys', ...args, '--config', config])
    t.equal(run.code, 2, args.join(' '))
    t.equal(run.stdout, '', 'no secret')
    t.match(run.stderr, message)
  }
  t.notOk(existsSync(keys), 'nothing was written')
})

t.test('the keys file is config.yaml\'s auth.keys_file, by --config, LLAMAGATE_CONFIG or LLAMAGATE_HOME', async (t) => {
  const { config, dataDir } = await setup(t, 'auth:\n  keys_file: team/keys.yaml\n')
  const added = await runCli(['keys', 'add', 'bob'], { LLAMAGATE_CONFIG: config })
  t.equal(added.code, 0, added.stderr)
  const file = join(dataDir, 'team', 'keys.yaml')
  t.equal(readKeysFile(file).keys[0]!.hash, hashSecret(added.stdout.trim()), 'relative to data_dir, folder made')
  t.match((await runCli(['keys', 'list', '--config', config])).stdout, /\nbob +infer/)
  // No config file named: the shipped config.yaml, with the data folder from LLAMAGATE_HOME.
  const home = await tempDir(t)
  t.equal((await runCli(['keys', 'add', 'dave'], { LLAMAGATE_HOME: home })).code, 0)
  t.same(readKeysFile(join(home, 'keys.yaml')).keys.map((k) => k.name), ['dave'])
  const empty = await tempDir(t)
  t.equal((await runCli(['keys', 'list'], { LLAMAGATE_HOME: empty })).stdout, `no API keys in ${join(empty, 'keys.yaml')} yet (llamagate keys add <name> makes one)\n`)
  const missing = await runCli(['keys', 'list', '--config', join(home, 'nope.yaml')])
  t.equal(missing.code, 2, 'a config file that is not there')
  t.match(missing.stderr, /config file .*nope\.yaml does not exist/)
})

t.test('adds at once all land: the file is changed under a lock', async (t) => {
  const { config, keys } = await setup(t)
  const names = ['k1', 'k2', 'k3', 'k4']
  const runs = await Promise.all(names.map((name) => runCli(['keys', 'add', name, '--config', config])))
  t.same(runs.map((r) => r.code), [0, 0, 0, 0], runs.map((r) => r.stderr).join(''))
  const entries = readKeysFile(keys).keys
  t.same(entries.map((e) => e.name).sort(), names, 'no add lost another\'s key')
  for (const [i, name] of names.entries()) t.equal(entries.find((e) => e.name === name)!.hash, hashSecret(runs[i]!.stdout.trim()), `${name}'s printed secret is the one kept`)
  t.notOk(existsSync(`${keys}.lock`), 'the lock is given back')
})

t.test('a keys file broken by hand: the commands say so and change nothing', async (t) => {
  const { config, keys, dataDir } = await setup(t)
  await mkdir(dataDir, { recursive: true })
  const broken = 'keys:\n  - name: bob\n    scopes: [infer\n'
  await writeFile(keys, broken)
  for (const args of [['add', 'carol'], ['revoke', 'bob'], ['list']]) {
    const run = await runCliHere(['keys', ...args, '--config', config])
    t.equal(run.code, 1, args.join(' '))
    t.equal(run.stdout, '')
    t.match(run.stderr, /^llamagate keys: keys file .*keys\.yaml: not YAML: .*\nNothing was changed; fix the file by hand first\.\n$/)
  }
  t.equal(await readFile(keys, 'utf8'), broken)
})

t.test('llamagate help keys: what each action does, and that the secret is shown once', async (t) => {
  const help = await runCliHere(['help', 'keys'])
  t.equal(help.code, 0)
  t.match(help.stdout, /^keys: hand out API keys with scopes, models and limits; list and revoke them\n\nusage: llamagate keys add <name> \[--scope LIST\]/)
  t.match(help.stdout, /\n {7}llamagate keys list \[--json\]\n {7}llamagate keys revoke <name>\n/)
  for (const flag of ['--scope LIST', '--models LIST', '--concurrent N', '--rpm N', '--tokens-per-day N', '--queue-share F', '--json', '--config FILE']) t.match(help.stdout, `\n  ${flag} `, flag)
  t.match(help.stdout, /infer +chat, generate, embed, rerank/)
  t.match(help.stdout, /add prints the new secret alone on stdout, once/)
  t.match((await runCliHere(['help'])).stdout, /\n {2}keys +hand out API keys/, 'listed in llamagate help')
  t.equal((await runCli(['keys', '--help'])).stdout, help.stdout, 'the program itself prints the same')
})
