import type { Test } from 'tap'
import { buildTestApp, testConfig } from './app.js'
import type { InferenceServer } from './inference.js'
import { cpuRuntime } from './runtime.js'

// What the tests of test/plugins/prompt-cache share: long prompts of their own, the prompt cache's
// events as lists, and a gateway restarted over the same data folder.

const WORDS = 'the quick brown fox jumps over the lazy dog while seven wise owls count the stars above a quiet harbour'.split(' ')

/** A long prompt of its own for each conversation: `n` words drawn from WORDS by a seed. */
export function prefix (seed: number, n = 120): string {
  return Array.from({ length: n }, (_, i) => WORDS[(i * 7 + seed * 13 + ((i * seed) % 5)) % WORDS.length]).join(' ')
}

/** A server with each prompt-cache event's tokens (or reason) listed as they come. */
export interface Watched extends InferenceServer { saved: number[], restored: number[], reused: number[], missed: string[] }

export function watchCaches (server: InferenceServer): Watched {
  const watched: Watched = { ...server, saved: [], restored: [], reused: [], missed: [] }
  const { events } = server.app.promptCache!
  events.on('saved', (_m, tokens) => watched.saved.push(tokens))
  events.on('restored', (_m, tokens) => watched.restored.push(tokens))
  events.on('reused', (_m, tokens) => watched.reused.push(tokens))
  events.on('missed', (_m, reason) => watched.missed.push(reason))
  return watched
}

/** A new gateway over the same data folder (the last one closed): it finds the saves on disk. */
export async function restartGateway (t: Test, server: InferenceServer, values: Record<string, unknown>): Promise<Watched> {
  const runtime = await cpuRuntime()
  const config = await testConfig(t, { data_dir: server.app.config.dataDir, runtime: 'cpu', runtimes: { cpu: { bin: runtime.binDir } }, ...values })
  const app = await buildTestApp(config)
  t.teardown(() => app.close())
  return watchCaches({ app, url: await app.listen({ host: '127.0.0.1', port: 0 }) })
}
