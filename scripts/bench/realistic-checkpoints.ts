import { mkdir, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { loadConfig } from '../../core/platform/config.js'
import type { Logger } from '../../core/base/logger.js'
import { LlamaServer } from '../../runtimes/process/llama-server.js'
import { RuntimeRegistry } from '../../runtimes/registry.js'
import type { RuntimeBuild } from '../../runtimes/types.js'
import { prose } from './bench-chat.js'
import { findOrFetchSource } from './llama-cpp-source.js'
import { CHAT_FORMATS, TINY_HYBRID } from '../fixtures/realistic-architectures/chat-formats.js'
import { writeRealisticModel } from '../fixtures/realistic-model.js'

/**
 * `node dist/scripts/bench/realistic-checkpoints.js [--arch qwen35,lfm2,gemma3,gemma4] [--words 3800]`: how much of a
 * follow-up llama-server evaluates on the tiny hybrid and sliding-window models (realistic-architectures/), whose
 * memory it cannot cut back to an earlier token: it keeps context checkpoints instead. A long first turn, then
 * the same follow-up (the conversation, the answer, a new question) and the same retry (the first turn again)
 * twice each: while the model stays loaded, and after the slot was saved (`/slots/0?action=save`), llama-server
 * restarted with the same --slot-save-path and the slot restored. A saved slot holds no checkpoints, so where a
 * request needs one, the restored slot evaluates the whole prompt again ("forcing full prompt re-processing due
 * to lack of cache data" in its trace log). One thread, the CPU build.
 */

const ARCHS = Object.keys(CHAT_FORMATS) as Array<keyof typeof CHAT_FORMATS>
const CTX = 40_960
const FULL_REPROCESSING = /forcing full prompt re-processing/

interface Turn { content: string, finish: string, promptN: number, cacheN: number, promptTokens: number }

function say (line: string): void { process.stdout.write(`${line}\n`) }

async function main (): Promise<void> {
  const { values } = parseArgs({ options: { arch: { type: 'string', default: ARCHS.join(',') }, words: { type: 'string', default: '3800' } } })
  const archs = values.arch.split(',') as typeof ARCHS
  for (const arch of archs) if (!ARCHS.includes(arch)) throw new Error(`unknown architecture ${JSON.stringify(arch)}: one of ${ARCHS.join(', ')}`)
  const config = loadConfig()
  const build = (await RuntimeRegistry.create({ config })).builds.find((b) => b.backend === 'cpu')
  if (!build) throw new Error('no CPU llama-server: npm run runtime:build -- --backend cpu')
  const { dir: llamaCppSrc } = await findOrFetchSource(config.dataDir, config.llamaCppSrc, say)
  const dir = await mkdtemp(join(tmpdir(), 'llamagate-checkpoints-'))
  try {
    for (const arch of archs) {
      const file = join(dir, `${arch}.gguf`)
      await writeRealisticModel({ ...CHAT_FORMATS[arch], ...TINY_HYBRID, file, llamaCppSrc, name: `tiny ${arch}` })
      say(await measure(build, arch, file, join(dir, `${arch}-slots`), Number(values.words)))
    }
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

async function measure (build: RuntimeBuild, arch: string, file: string, slots: string, words: number): Promise<string> {
  await mkdir(slots, { recursive: true })
  const traced: string[] = []
  // Trace level (4): llama-server says why it re-evaluates a prompt only there.
  const log: Logger = { debug: (_o, line) => { if (line !== undefined && FULL_REPROCESSING.test(line)) traced.push(line) }, info: () => {}, warn: () => {}, error: () => {} }
  const options = { build, modelPath: file, alias: arch, ctxSize: CTX, parallel: 1, threads: 1, slotSavePath: slots, extraArgs: ['--verbosity', '4'], log }
  const first = [{ role: 'user', content: `Read this and say when you are done. ${prose(words, 7)}` }]
  let server = new LlamaServer(options)
  try {
    await server.start()
    const answer = await ask(server, first)
    await post(server, '/slots/0?action=save', { filename: 'conversation.bin' })
    // A client's retry: the same messages again, so the cache must go back to the end of the prompt, before the
    // answer it holds (the follow-up parts from the cache only where the template renders the answer apart).
    const retried = await ask(server, first)
    const followUp = [...first, { role: 'assistant', content: answer.content }, { role: 'user', content: 'Good. What comes next?' }]
    const loaded = await ask(server, followUp)
    const beforeRestart = traced.length
    await server.stop()
    server = new LlamaServer(options)
    await server.start()
    await post(server, '/slots/0?action=restore', { filename: 'conversation.bin' })
    const restored = await ask(server, followUp)
    await post(server, '/slots/0?action=restore', { filename: 'conversation.bin' })
    const retriedRestored = await ask(server, first)
    return `${arch}: first turn ${answer.promptN} tokens evaluated, answered ${JSON.stringify(answer.content)} (${answer.finish})\n` +
      `  follow-up of ${loaded.promptTokens} tokens: ${loaded.promptN} evaluated while loaded (cache_n ${loaded.cacheN}), ` +
      `${restored.promptN} after save, restart and restore (cache_n ${restored.cacheN})\n` +
      `  retry of ${retried.promptTokens} tokens: ${retried.promptN} evaluated while loaded (cache_n ${retried.cacheN}), ` +
      `${retriedRestored.promptN} after restore (cache_n ${retriedRestored.cacheN})\n` +
      `  "forcing full prompt re-processing" logged ${beforeRestart} times before the restart, ${traced.length - beforeRestart} after`
  } finally {
    await server.stop()
  }
}

async function ask (server: LlamaServer, messages: unknown[]): Promise<Turn> {
  const body = await post(server, '/v1/chat/completions', { messages, max_tokens: 16, temperature: 0 }) as {
    choices: Array<{ finish_reason: string, message: { content: string | null } }>
    usage: { prompt_tokens: number }
    timings: { prompt_n: number, cache_n: number }
  }
  const [choice] = body.choices
  return { content: choice!.message.content ?? '', finish: choice!.finish_reason, promptN: body.timings.prompt_n, cacheN: body.timings.cache_n, promptTokens: body.usage.prompt_tokens }
}

async function post (server: LlamaServer, path: string, body: unknown): Promise<unknown> {
  const res = await fetch(`${server.endpoint.address.baseUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  if (!res.ok) throw new Error(`${path} answered ${res.status}: ${await res.text()}`)
  return res.json()
}

main().catch((err) => { process.stderr.write(`realistic-checkpoints failed: ${(err as Error).stack}\n`); process.exit(1) })
