import t from 'tap'
import { formatDuration, relativeTime, table } from '../../../core/cli/commands/human.js'
import { toUrl } from '../../../core/cli/commands/server-address.js'

t.test('relativeTime says how far, in the largest whole unit, and which way', async (t) => {
  const now = Date.parse('2026-01-01T00:00:00Z')
  t.equal(relativeTime(now + 4 * 60_000 + 59_000, now), '4 minutes from now')
  t.equal(relativeTime(now - 1000, now), '1 second ago')
  t.equal(relativeTime(now - 3 * 24 * 3600_000, now), '3 days ago')
  t.equal(relativeTime(now + 400, now), 'now')
  t.equal(relativeTime(new Date(now - 2 * 365 * 24 * 3600_000).toISOString(), now), '2 years ago')
  t.equal(relativeTime('not a date', now), 'unknown')
})

t.test('formatDuration', async (t) => {
  t.equal(formatDuration(250), '250ms')
  t.equal(formatDuration(4_200), '4.2s')
  t.equal(formatDuration(200_000), '3m20s')
  t.equal(formatDuration(3_900_000), '1h5m')
})

t.test('table aligns each column to its widest cell', async (t) => {
  t.equal(table(['A', 'BB'], [['long', 'x'], ['s', 'yy']]), 'A      BB\nlong   x\ns      yy\n')
  t.equal(table(['NAME', 'SIZE'], []), 'NAME   SIZE\n')
})

t.test('toUrl reads what people type as OLLAMA_HOST is read', async (t) => {
  t.equal(toUrl('localhost'), 'http://localhost:11435')
  t.equal(toUrl('10.0.0.2:8080'), 'http://10.0.0.2:8080')
  t.equal(toUrl('0.0.0.0:9'), 'http://127.0.0.1:9', 'a wildcard is reached on loopback')
  t.equal(toUrl('[::]:9'), 'http://[::1]:9')
  t.equal(toUrl('https://gate.example/'), 'https://gate.example', 'a URL keeps its scheme\'s port')
  t.equal(toUrl('http://gate.example:81/base/'), 'http://gate.example:81/base', 'and its path')
  t.throws(() => toUrl('ftp://x'), /not an http or https address/)
  t.throws(() => toUrl('http://'), /not a server address/)
})
