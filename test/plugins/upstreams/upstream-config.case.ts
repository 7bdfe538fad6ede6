import t from 'tap'
import { ConfigError, resolveConfig } from '../../../core/platform/config.js'

// config.yaml's upstreams: what loads, with which defaults, and what is refused at start, and why.

const load = (upstreams: unknown[]) => resolveConfig([{ source: 'config.yaml', values: { upstreams } }])

t.test('entries load with their defaults; the URL loses its trailing slash', async (t) => {
  t.same(resolveConfig([]).upstreams, [], 'none by default')
  const config = load([
    { name: 'gpu-box', url: 'http://10.0.0.7:11435/', kind: 'llamagate' },
    { name: 'vllm.1', url: 'https://vllm.example.com/v1-proxy//', kind: 'openai', key: 'sk-abc', models: ['Qwen/Qwen3-32B'], prefix: 'vllm/', max_concurrent: 4 },
    { name: 'o_l-l', url: 'http://[::1]:11434', kind: 'ollama', key: null },
  ])
  // Every upstream's answers are read within limits.upstream_*.
  const limits = { answerBytes: 64 << 20, errorBytes: 64 << 10, lineBytes: 8 << 20, models: 10_000 }
  t.same(config.upstreams, [
    { name: 'gpu-box', url: 'http://10.0.0.7:11435', kind: 'llamagate', key: null, models: [], prefix: '', maxConcurrent: 16, limits },
    { name: 'vllm.1', url: 'https://vllm.example.com/v1-proxy', kind: 'openai', key: 'sk-abc', models: ['Qwen/Qwen3-32B'], prefix: 'vllm/', maxConcurrent: 4, limits },
    { name: 'o_l-l', url: 'http://[::1]:11434', kind: 'ollama', key: null, models: [], prefix: '', maxConcurrent: 16, limits },
  ])
  const set = resolveConfig([{ source: 'config.yaml', values: { upstreams: [{ name: 'a', url: 'http://h:1', kind: 'openai' }], limits: { upstream_answer_size: '1MiB', upstream_error_size: 1000, upstream_line_size: '64KiB', upstream_models: 50 } } }])
  t.same(set.upstreams[0]!.limits, { answerBytes: 1 << 20, errorBytes: 1000, lineBytes: 64 << 10, models: 50 }, 'as config.yaml sets them')
  t.throws(() => resolveConfig([{ source: 'config.yaml', values: { limits: { upstream_line_size: 'big' } } }]), /limits\.upstream_line_size = "big" is not allowed: must be a size/)
})

// Each mistake: the message names the entry and the key, and says what is allowed.
const MISTAKES: Array<[string, unknown[], RegExp]> = [
  ['a name used twice', [{ name: 'a', url: 'http://h:1', kind: 'openai' }, { name: 'a', url: 'http://h:2', kind: 'openai' }], /upstreams\[1\] \(a\): the name is used twice/],
  ['a name with a space', [{ name: 'my box', url: 'http://h:1', kind: 'openai' }], /upstreams\[0\]\.name = "my box" is not allowed: must be 1-64 of A-Z a-z 0-9 \. _ -/],
  ['an empty name', [{ name: '', url: 'http://h:1', kind: 'openai' }], /upstreams\[0\]\.name = "" is not allowed/],
  ['a name too long', [{ name: 'x'.repeat(65), url: 'http://h:1', kind: 'openai' }], /upstreams\[0\]\.name = "x{65}" is not allowed/],
  ['not a URL', [{ name: 'a', url: 'h:1/x', kind: 'openai' }], /upstreams\[0\] \(a\): url "h:1\/x" is not allowed: must start with http:\/\/ or https:\/\//],
  ['no scheme at all', [{ name: 'a', url: '10.0.0.7:8080', kind: 'openai' }], /upstreams\[0\] \(a\): url "10\.0\.0\.7:8080" is not allowed/],
  ['another scheme', [{ name: 'a', url: 'ftp://h/', kind: 'openai' }], /url "ftp:\/\/h\/" is not allowed: must start with http:\/\/ or https:\/\//],
  ['a query', [{ name: 'a', url: 'http://h:1/v1?x=1', kind: 'openai' }], /url "http:\/\/h:1\/v1\?x=1" is not allowed: must have no query/],
  ['an empty query', [{ name: 'a', url: 'http://h:1/?', kind: 'openai' }], /must have no query/],
  ['an unknown kind', [{ name: 'a', url: 'http://h:1', kind: 'tgi' }], /upstreams\.0\.kind = "tgi" is not allowed: must be one of "llamagate", "openai", "ollama"/],
  ['max_concurrent 0', [{ name: 'a', url: 'http://h:1', kind: 'openai', max_concurrent: 0 }], /upstreams\.0\.max_concurrent = 0 is not allowed: must be >= 1/],
  ['an unknown key', [{ name: 'a', url: 'http://h:1', kind: 'openai', token: 'x' }], /upstreams\.0\.token is not a known key; allowed keys here: name, url, kind, key, models, prefix, max_concurrent/],
  ['no url', [{ name: 'a', kind: 'openai' }], /upstreams\.0 = .* is not allowed: must have required property 'url'/],
]

for (const [what, upstreams, expected] of MISTAKES) {
  t.test(`refused: ${what}`, async (t) => {
    t.throws(() => load(upstreams), ConfigError)
    t.throws(() => load(upstreams), expected)
  })
}

t.test('a key or a password is never quoted in a message', async (t) => {
  const keyWithSpace = (() => { try { load([{ name: 'a', url: 'http://h:1', kind: 'openai', key: 'sk secret-value' }]); return null } catch (err) { return err as Error } })()
  t.match(keyWithSpace?.message, /upstreams\[0\] \(a\): key must be printable ASCII without spaces/)
  t.notMatch(keyWithSpace?.message, /secret-value/)
  const withPassword = (() => { try { load([{ name: 'a', url: 'https://me:hunter22@h/v1', kind: 'openai' }]); return null } catch (err) { return err as Error } })()
  t.match(withPassword?.message, /upstreams\[0\] \(a\): url is not allowed: it must carry no user or password; put the upstream's key in key/)
  t.notMatch(withPassword?.message, /hunter22/)
})
