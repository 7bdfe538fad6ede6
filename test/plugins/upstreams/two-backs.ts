import type { IncomingMessage } from 'node:http'
import { join } from 'node:path'
import type { Test } from 'tap'
import type { FastifyInstance } from 'fastify'
import { writeTinyGguf } from '../../../scripts/fixtures/tiny-model.js'
import { buildTestApp, tempDir, testConfig } from '../../helpers/app.js'
import { serveTinyModels, type InferenceServer } from '../../helpers/inference.js'
import { cpuRuntime } from '../../helpers/runtime.js'
import { until } from '../../helpers/until.js'

/** A back llamagate, with the chat requests it was sent (their first user message, as the front passed it on). */
export interface Back { app: FastifyInstance, url: string, port: number, asked: string[] }

// One context large enough for a long stream (the in-flight failover case), two slots.
const BACK_OPTIONS = { num_ctx: 4096, num_parallel: 2, max_tokens: 4, ignore_eos: true }

let seed = 7

/** A back llamagate serving acme/chat on `port` (0: a free one). */
export async function serveBack (t: Test, port = 0): Promise<Back> {
  const runtime = await cpuRuntime()
  const app = await buildTestApp(await testConfig(t, { runtime: 'cpu', runtimes: { cpu: { bin: runtime.binDir } }, default_options: BACK_OPTIONS }))
  t.teardown(() => app.close())
  const asked = recordQuestions(app)
  const file = join(await tempDir(t, 'llamagate-models-'), 'chat.gguf')
  await writeTinyGguf({ file, seed: seed++, name: 'acme/chat' })
  await app.store.import('acme/chat', file)
  const url = await app.listen({ host: '127.0.0.1', port })
  return { app, url, port: Number(new URL(url).port), asked }
}

/**
 * The first user message of each chat request `app` is sent, as it came in on the wire, whatever the routes made of
 * it: the question names the conversation.
 */
export function recordQuestions (app: FastifyInstance): string[] {
  const asked: string[] = []
  // The body is copied as the parser pushes it (the request event comes first), so that Fastify still reads all of it.
  app.server.on('request', (request: IncomingMessage) => {
    if (request.method !== 'POST') return
    const chunks: Buffer[] = []
    const push = request.push.bind(request)
    request.push = (chunk: Buffer | null, encoding?: BufferEncoding): boolean => {
      if (chunk !== null) chunks.push(Buffer.from(chunk))
      else {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { messages?: Array<{ role: string, content: string }> }
        asked.push(body.messages?.find((m) => m.role === 'user')?.content ?? '')
      }
      return push(chunk, encoding)
    }
  })
  return asked
}

/** A front whose upstreams `a` and `b` list the same model under one prefix: one name, `pool/acme/chat`, two places. */
export async function serveFront (t: Test, a: Back, b: Back, routing: 'prefix' | 'round_robin' = 'prefix'): Promise<InferenceServer> {
  const front = await serveTinyModels(t, [], {
    upstreams: [
      { name: 'a', url: a.url, kind: 'llamagate', prefix: 'pool/' },
      { name: 'b', url: b.url, kind: 'llamagate', prefix: 'pool/' },
    ],
    upstream_routing: routing,
  })
  await until('both upstreams healthy', () => ['a', 'b'].every((name) => front.app.upstreams.stateOf(name)?.healthy === true))
  return front
}

/**
 * The back as the front sees a stopped server: its port refuses, its connections (a stream in flight) are cut. Its
 * app stays up until the test ends, because closing an app stops every llama-server of the process (the runtime
 * launcher's stopAll), the other back's too.
 */
export async function stopBack (back: Back): Promise<void> {
  const closed = new Promise<void>((resolve) => back.app.server.close(() => resolve()))
  back.app.server.closeAllConnections()
  await closed
}

export const MODEL = 'pool/acme/chat'

/** Conversation `n`'s turn `turn`: a system prompt and first question of its own, then the turns so far. */
export function conversation (n: number, turn = 0): Array<{ role: string, content: string }> {
  const messages = [{ role: 'system', content: `You help with project ${n}.` }, { role: 'user', content: `question ${n}` }]
  for (let i = 1; i <= turn; i++) messages.push({ role: 'assistant', content: `answer ${i}` }, { role: 'user', content: `follow-up ${i} of ${n}` })
  return messages
}
