import t from 'tap'
import { readGgufHeader } from '../../core/gguf-header.js'
import { LlamaServer } from '../../runtimes/process/llama-server.js'
import { prose } from '../../scripts/bench-chat.js'
import { REALISTIC, realisticModel } from '../helpers/realistic-models.js'
import { cpuRuntime } from '../helpers/runtime.js'

// The tiny models of the architectures llama-server keeps context checkpoints for (scripts/realistic-architectures/)
// under the real llama-server, one at a time: each loads, answers a chat with "Done" and ends its turn, and a retry
// and a follow-up of a conversation longer than the sliding window are served from the slot's cache, from a context
// checkpoint where the memory cannot be cut back to the point where the prompts part. (What a slot saved to disk
// and restored loses of that, scripts/realistic-checkpoints.ts shows.)

const KINDS = ['qwen35', 'lfm2', 'gemma3', 'gemma4'] as const
// Greedy, and room to see a turn that would not end.
const LIMITS = { temperature: 0, max_tokens: 8 }

interface Answer { content: string, finish: string, completionTokens: number, promptTokens: number, promptN: number }

async function chat (server: LlamaServer, messages: unknown[]): Promise<Answer> {
  const res = await fetch(`${server.endpoint.address.baseUrl}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ messages, ...LIMITS }), signal: AbortSignal.timeout(60_000),
  })
  if (res.status !== 200) throw new Error(`/v1/chat/completions answered ${res.status}: ${await res.text()}`)
  const body = await res.json() as {
    choices: Array<{ finish_reason: string, message: { content: string | null } }>
    usage: { completion_tokens: number, prompt_tokens: number }
    timings: { prompt_n: number }
  }
  const [choice] = body.choices
  return { content: choice!.message.content ?? '', finish: choice!.finish_reason, completionTokens: body.usage.completion_tokens, promptTokens: body.usage.prompt_tokens, promptN: body.timings.prompt_n }
}

for (const kind of KINDS) {
  t.test(`${kind}: loads, ends its turn, and serves a long conversation's follow-up from its cache`, async (t) => {
    const file = await realisticModel(kind)
    const { metadata } = await readGgufHeader(file, { maxArrayLength: 64 })
    const arch = REALISTIC[kind].architecture
    t.equal(metadata['general.architecture'], arch)
    t.ok(Number(metadata[`${arch}.context_length`]) >= 32_768, 'trained on 32768 tokens or more')
    const server = new LlamaServer({ build: await cpuRuntime(), modelPath: file, alias: `tiny/${kind}`, ctxSize: 4096, parallel: 1, threads: 1 })
    t.teardown(() => server.stop())
    await server.start()

    const hello = await chat(server, [{ role: 'user', content: 'Hello!' }])
    t.match(hello, { content: 'Done', finish: 'stop' }, `${JSON.stringify(hello.content)} (${hello.finish})`)
    t.ok(hello.completionTokens <= 3, `${hello.completionTokens} tokens to the end of the turn`)

    // Three times the sliding window; the hybrids' recurrent layers have no window at all.
    const long = [{ role: 'user', content: `Read this. ${prose(800, 7)}` }]
    const first = await chat(server, long)
    t.equal(first.finish, 'stop')
    t.ok(first.promptTokens > 3 * REALISTIC[kind].slidingWindow, `${first.promptTokens} tokens in the first prompt`)
    // A retry goes back to the end of the prompt, before the answer the cache holds: a checkpoint for all four.
    const retry = await chat(server, long)
    t.ok(retry.promptN <= 4, `${retry.promptN} of the retry's ${retry.promptTokens} tokens evaluated`)
    const followUp = await chat(server, [...long, { role: 'assistant', content: first.content }, { role: 'user', content: 'What next?' }])
    t.equal(followUp.finish, 'stop')
    t.ok(followUp.promptN < 40, `${followUp.promptN} of the follow-up's ${followUp.promptTokens} tokens evaluated`)
  })
}
