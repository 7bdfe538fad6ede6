import { existsSync } from 'node:fs'
import { readFile, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { UsageLedger, type UsedModel } from '../../../plugins/usage/usage-ledger.js'
import { tempDir } from '../../helpers/app.js'

// The ledger on its own, with a clock the test moves: what a day counts, what the file keeps, what a bad file does.

const DAY = 24 * 3600_000
const used = (prompt: number, generated: number, more: Partial<UsedModel> = {}): UsedModel =>
  ({ promptTokens: prompt, cachedTokens: 0, generatedTokens: generated, queueMs: 0, runtimeMs: 0, ...more })

function quietLog (): { lines: Array<{ o: unknown, m?: string }>, info: (o: unknown, m?: string) => void, warn: (o: unknown, m?: string) => void, error: (o: unknown, m?: string) => void } {
  const lines: Array<{ o: unknown, m?: string }> = []
  return { lines, info: () => {}, warn: (o, m) => { lines.push({ o, m }) }, error: (o, m) => { lines.push({ o, m }) } }
}

t.test('totals per key and model; today\'s tokens per key start again at 00:00 UTC; the file keeps two days', async (t) => {
  const file = join(await tempDir(t), 'usage.json')
  let now = Date.parse('2025-03-01T23:59:58Z')
  const ledger = new UsageLedger({ file, log: quietLog(), now: () => now })
  await ledger.load()
  ledger.record('alice', 'acme/a', used(10, 5, { cachedTokens: 4, queueMs: 1.5, runtimeMs: 20.25 }))
  ledger.record('alice', 'acme/a', used(7, 3, { cachedTokens: 2, queueMs: 0.5, runtimeMs: 10 }))
  ledger.record('alice', 'acme/b', used(1, 1))
  ledger.record('bob', 'acme/a', used(100, 0))
  t.same(ledger.modelsOf('alice'), [
    { model: 'acme/a', totals: { requests: 2, prompt_tokens: 17, cached_tokens: 6, generated_tokens: 8, queue_ms: 2, runtime_ms: 30.25 } },
    { model: 'acme/b', totals: { requests: 1, prompt_tokens: 1, cached_tokens: 0, generated_tokens: 1, queue_ms: 0, runtime_ms: 0 } },
  ])
  t.equal(ledger.tokensToday('alice'), 17 + 8 + 2, 'prompt plus generated')
  t.equal(ledger.tokensToday('bob'), 100)
  t.equal(ledger.tokensToday('carol'), 0, 'a key that used nothing')
  t.same(ledger.keys(), ['alice', 'bob'])
  t.equal(ledger.today(), '2025-03-01')

  now += 2_000
  t.equal(ledger.today(), '2025-03-02')
  t.equal(ledger.tokensToday('alice'), 0, 'a new UTC day counts from 0')
  ledger.record('alice', 'acme/a', used(3, 3))
  t.equal(ledger.tokensToday('alice'), 6)
  t.equal(ledger.modelsOf('alice')[0]!.totals.requests, 3, 'the totals go on across days')

  await ledger.flush()
  const kept = JSON.parse(await readFile(file, 'utf8')) as { days: Record<string, unknown> }
  t.same(Object.keys(kept.days).sort(), ['2025-03-01', '2025-03-02'], 'yesterday and today')

  now += 2 * DAY
  ledger.record('bob', 'acme/a', used(1, 0))
  await ledger.flush()
  const later = JSON.parse(await readFile(file, 'utf8')) as { days: Record<string, unknown> }
  t.same(Object.keys(later.days), ['2025-03-04'], 'days older than yesterday are forgotten')

  const again = new UsageLedger({ file, log: quietLog(), now: () => now })
  await again.load()
  t.same([...again.rows()], [...ledger.rows()], 'a new ledger on the file has every total')
  t.equal(again.tokensToday('bob'), 1)
})

t.test('a file that is not usage is set aside as .bad, said in the log, and counting starts afresh', async (t) => {
  const dir = await tempDir(t)
  const damaged = {
    'cut short': '{"version":1,"keys":{"alice":{"acme/a":{"requests":',
    'another version': JSON.stringify({ version: 2, keys: {}, days: {} }),
    'not a mapping of keys': JSON.stringify({ version: 1, keys: [], days: {} }),
  }
  for (const [what, text] of Object.entries(damaged)) {
    const file = join(dir, 'usage.json')
    await rm(`${file}.bad`, { force: true })
    await writeFile(file, text)
    const log = quietLog()
    const ledger = new UsageLedger({ file, log })
    await ledger.load()
    t.same(ledger.keys(), [], `${what}: nothing read`)
    t.notOk(existsSync(file), `${what}: moved away`)
    t.equal(await readFile(`${file}.bad`, 'utf8'), text, `${what}: kept as it was, beside it`)
    t.match(log.lines, [{ m: /usage file could not be read/, o: { setAside: `${file}.bad` } }], `${what}: one log line says so`)
    ledger.record('alice', 'acme/a', used(1, 1))
    await ledger.flush()
    t.ok(existsSync(file), `${what}: a fresh file is written`)
  }
})

t.test('a write that fails is said in the log and made at a later flush; nothing counted: nothing written', async (t) => {
  const dir = await tempDir(t)
  const blocker = join(dir, 'data')
  const file = join(blocker, 'usage.json')
  const log = quietLog()
  const ledger = new UsageLedger({ file, log })
  await ledger.load()
  await ledger.flush()
  t.notOk(existsSync(blocker), 'no usage, no file')
  await writeFile(blocker, 'a file where the folder should be')
  ledger.record('alice', 'acme/a', used(2, 2))
  await ledger.flush()
  t.match(log.lines, [{ m: /usage could not be written/ }])
  await rm(blocker)
  await ledger.flush()
  const kept = JSON.parse(await readFile(file, 'utf8')) as { keys: Record<string, Record<string, { requests: number }>> }
  t.equal(kept.keys.alice!['acme/a']!.requests, 1, 'written once the folder could be made')
})

t.test('entries that cannot be counts are left out one by one, named in the log; the rest of the file is kept', async (t) => {
  const file = join(await tempDir(t), 'usage.json')
  const now = Date.parse('2025-03-01T12:00:00Z')
  const good = { requests: 2, prompt_tokens: 10, cached_tokens: 4, generated_tokens: 6, queue_ms: 1.5, runtime_ms: 20 }
  await writeFile(file, JSON.stringify({
    version: 1,
    keys: {
      alice: { 'acme/a': good, 'acme/b': { ...good, requests: 'many' }, 'acme/c': { ...good, generated_tokens: -2000000 } },
      bob: { 'acme/a': { ...good, prompt_tokens: 1.5 } },
      carol: 'everything',
      dave: { 'acme/a': { ...good, prompt_tokens: 1e300 } },
    },
    days: { '2025-03-01': { alice: 16, bob: -5, dave: 'lots' }, 'not a date': { alice: 1 } },
  }))
  const log = quietLog()
  const ledger = new UsageLedger({ file, log, now: () => now })
  await ledger.load()
  t.ok(existsSync(file), 'the file is not set aside')
  t.same(ledger.modelsOf('alice'), [{ model: 'acme/a', totals: good }], 'alice\'s good entry kept, her bad ones left out')
  t.same(ledger.modelsOf('bob'), [], 'a fractional token count is not a count')
  t.same(ledger.modelsOf('dave'), [], 'nor an absurd one')
  t.equal(ledger.tokensToday('alice'), 16)
  t.equal(ledger.tokensToday('bob'), 0)
  t.match(log.lines, [{ m: /entries that are not counts: they were left out/, o: { count: 8 } }])
  t.match(JSON.stringify(log.lines), /keys\.alice\.acme\/c: generated_tokens is not a count/)
})

t.test('a request\'s impossible usage is refused whole and said in the log: nothing of it is counted', async (t) => {
  const log = quietLog()
  const ledger = new UsageLedger({ file: join(await tempDir(t), 'usage.json'), log })
  await ledger.load()
  t.equal(ledger.record('alice', 'acme/a', used(10, 5)), true)
  for (const bad of [used(-2_000_000, 5), used(10, 1.5), used(Number.NaN, 0), used(10, 2e12), used(10, 5, { cachedTokens: 11 }), used(1, 1, { queueMs: -1 }), used(1, 1, { runtimeMs: Infinity })]) {
    t.equal(ledger.record('alice', 'acme/a', bad), false, `refused: ${JSON.stringify(bad)}`)
  }
  t.equal(ledger.tokensToday('alice'), 15, 'only the possible one counts')
  t.equal(ledger.modelsOf('alice')[0]!.totals.requests, 1)
  t.equal(log.lines.filter((l) => /not possible counts/.test(l.m ?? '')).length, 7)
})
