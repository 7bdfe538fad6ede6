// Prompt caches on the architectures whose memory llama-server cannot roll back (runtimes/build/patches 0002: slot
// saves carry their context checkpoints): Qwen3.5's and LFM2's hybrids, Gemma 3's and Gemma 4's sliding windows
// (256 tokens). A follow-up with a new user turn on a conversation of 1,600 tokens (twice what a sliding-window layer
// keeps: its window and a 512-token batch) evaluates at most a fifth of its prompt while loaded, after the model was
// unloaded and after a gateway restart, and says what a cold evaluation says: the same tokens, top-1 logprobs within
// 1e-2. Without the patch the follow-up after a restore evaluated every token of its prompt.
import { readdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { prose } from '../../../scripts/bench/bench-chat.js'
import { TINY_HYBRID } from '../../../scripts/fixtures/realistic-architectures/chat-formats.js'
import { post, serveRealisticModels, type InferenceServer } from '../../helpers/inference.js'
import type { FixtureKind } from '../../helpers/realistic-models.js'
import { restartGateway, watchCaches } from '../../helpers/prompt-cache-watch.js'
import { until } from '../../helpers/until.js'

const KINDS = ['qwen35', 'gemma3', 'lfm2', 'gemma4'] as const satisfies readonly FixtureKind[]
const VALUES = { prompt_cache: { min_tokens: 256 }, default_options: { num_ctx: 4096, num_parallel: 1, max_tokens: 8 } }
/** Twice what a sliding-window layer keeps (its window and llama-server's 512-token batch), so that it has dropped most. */
const LONG_PROMPT = 2 * (TINY_HYBRID.slidingWindow + 512)
/** Words of prose that make a conversation of at least LONG_PROMPT tokens. */
const PROSE_WORDS = 1600

interface Message { role: string, content: string }
interface Answer { content: string, prompt: number, evaluated: number, logprobs: number[], tokens: string[] }

async function chat (server: InferenceServer, model: string, messages: Message[], extra: object = {}): Promise<Answer> {
  const res = await post(`${server.url}/v1/chat/completions`, { model, messages, temperature: 0, logprobs: true, top_logprobs: 1, ...extra })
  const body = await res.json() as {
    error?: unknown
    choices: Array<{ message: { content: string | null }, logprobs?: { content?: Array<{ token: string, logprob: number }> } }>
    usage: { prompt_tokens: number, prompt_tokens_details?: { cached_tokens?: number } }
  }
  if (res.status !== 200) throw new Error(`answered ${res.status}: ${JSON.stringify(body.error)}`)
  const [choice] = body.choices
  const steps = choice!.logprobs?.content ?? []
  return {
    content: choice!.message.content ?? '',
    prompt: body.usage.prompt_tokens,
    evaluated: body.usage.prompt_tokens - (body.usage.prompt_tokens_details?.cached_tokens ?? 0),
    logprobs: steps.map((s) => s.logprob),
    tokens: steps.map((s) => s.token),
  }
}

/** The same answer as a cold evaluation: its tokens, and each top-1 logprob within 1e-2. */
function sameAsCold (t: Test, what: string, warm: Answer, cold: Answer): void {
  t.same(warm.tokens, cold.tokens, `${what}: the tokens of a cold evaluation (${JSON.stringify(cold.content)})`)
  const drift = Math.max(0, ...warm.logprobs.map((p, i) => Math.abs(p - (cold.logprobs[i] ?? Infinity))))
  t.ok(drift <= 1e-2, `${what}: top-1 logprobs within ${drift.toExponential(1)} of a cold evaluation's`)
}

interface Events { restored: number[], reused: number[], missed: string[] }

/** Each model's prompt-cache events on one gateway, listed as they come. */
function eventsByModel (server: InferenceServer): (model: string) => Events {
  const byModel = new Map<string, Events>()
  const of = (model: string): Events => {
    let events = byModel.get(model)
    if (events === undefined) byModel.set(model, events = { restored: [], reused: [], missed: [] })
    return events
  }
  const { events } = server.app.promptCache!
  events.on('restored', (model, tokens) => of(model).restored.push(tokens))
  events.on('reused', (model, tokens) => of(model).reused.push(tokens))
  events.on('missed', (model, reason) => of(model).missed.push(reason))
  return of
}

// The four architectures side by side in one gateway (each its own model and llama-server), restarted once.
t.test('each architecture: a follow-up reuses the conversation loaded, after an unload and after a restart, as a cold run answers', async (t) => {
  const values = { ...VALUES, limits: { max_loaded_models: KINDS.length } }
  const server = await serveRealisticModels(t, Object.fromEntries(KINDS.map((kind) => [`tiny/${kind}`, kind])), values)
  const before = eventsByModel(server)
  const runs = await Promise.all(KINDS.map(async (kind) => {
    const model = `tiny/${kind}`
    const conversation: Message[] = [{ role: 'user', content: `Read this. ${prose(PROSE_WORDS, 11)}` }]
    const first = await chat(server, model, conversation)
    t.ok(first.prompt >= LONG_PROMPT, `${kind}: a conversation of ${first.prompt} tokens`)
    const turn = (answer: Answer, question: string): Message[] => {
      conversation.push({ role: 'assistant', content: answer.content }, { role: 'user', content: question })
      return [...conversation]
    }

    const loadedAsk = turn(first, 'What comes next?')
    const loaded = await chat(server, model, loadedAsk)
    t.ok(loaded.evaluated <= loaded.prompt / 5, `${kind} loaded: ${loaded.evaluated} of ${loaded.prompt} evaluated`)

    await post(`${server.url}/api/stop`, { model })
    const swappedAsk = turn(loaded, 'And after that?')
    const swapped = await chat(server, model, swappedAsk)
    t.equal(before(model).restored.length, 1, `${kind}: restored when it loaded again`)
    t.ok(swapped.evaluated <= swapped.prompt / 5, `${kind} after an unload: ${swapped.evaluated} of ${swapped.prompt} evaluated`)
    await until(`${kind}: the restore judged`, () => before(model).reused.length === 1)
    return { kind, model, turn, loadedAsk, loaded, swappedAsk, swapped }
  }))

  await server.app.close()
  const again = await restartGateway(t, server, values)
  const after = eventsByModel(again)
  await Promise.all(runs.map(async ({ kind, model, turn, loadedAsk, loaded, swappedAsk, swapped }) => {
    const restartedAsk = turn(swapped, 'Then what?')
    const restarted = await chat(again, model, restartedAsk)
    t.equal(after(model).restored.length, 1, `${kind}: restored by the new gateway`)
    t.ok(restarted.evaluated <= restarted.prompt / 5, `${kind} after a restart: ${restarted.evaluated} of ${restarted.prompt} evaluated`)
    await until(`${kind}: the restore judged`, () => after(model).reused.length === 1)
    t.same([...before(model).missed, ...after(model).missed], [], `${kind}: no miss`)

    // Cold: the same prompts evaluated from nothing (llama-server's cache_prompt off), after the cached runs.
    for (const [what, ask, warm] of [['loaded', loadedAsk, loaded], ['after an unload', swappedAsk, swapped], ['after a restart', restartedAsk, restarted]] as const) {
      const cold = await chat(again, model, ask, { cache_prompt: false })
      t.equal(cold.evaluated, cold.prompt, `${kind} ${what}: the cold run evaluated all ${cold.prompt}`)
      sameAsCold(t, `${kind} ${what}`, warm, cold)
    }
  }))
})

t.test('qwen35: four conversations in four slots are all saved and all restored, each to its own slot', async (t) => {
  const model = 'tiny/four'
  const values = { ...VALUES, default_options: { num_ctx: 4096, num_parallel: 4, max_tokens: 8 } }
  const server = watchCaches(await serveRealisticModels(t, { [model]: 'qwen35' }, values))
  const conversations = [1, 2, 3, 4].map((seed) => [{ role: 'user', content: `Read this. ${prose(600, 100 + seed)}` }])
  const firsts: Answer[] = []
  for (const messages of conversations) firsts.push(await chat(server, model, messages))
  await post(`${server.url}/api/stop`, { model })
  for (const [i, messages] of conversations.entries()) {
    const next = await chat(server, model, [...messages, { role: 'assistant', content: firsts[i]!.content }, { role: 'user', content: 'Next?' }])
    t.ok(next.evaluated <= next.prompt / 5, `conversation ${i + 1}: ${next.evaluated} of ${next.prompt} evaluated`)
  }
  t.equal(server.restored.length, 4, `four restored (${server.restored.join(', ')} tokens)`)
  await until('every restore judged', () => server.reused.length === 4)
  t.same(server.missed, [])
})

/** The offset where a save's checkpoints begin: the trailer's magic ('ckpt') and version 1, after the state. */
function trailerAt (file: Buffer): number {
  const at = file.indexOf(Buffer.from([0x63, 0x6b, 0x70, 0x74, 1, 0, 0, 0]))
  if (at < 0) throw new Error('no checkpoints in the save')
  return at
}

/** A qwen35 conversation of ~1,600 tokens saved by an unload: its save's file and bytes, and its follow-up to send. */
async function savedConversation (t: Test, model: string, seed: number) {
  const server = watchCaches(await serveRealisticModels(t, { [model]: 'qwen35' }, VALUES))
  const messages: Message[] = [{ role: 'user', content: `Read this. ${prose(1500, seed)}` }]
  const first = await chat(server, model, messages)
  await post(`${server.url}/api/stop`, { model })
  const dir = join(server.app.config.modelsDir, '.prompt-cache')
  const [save] = (await readdir(dir)).filter((f) => f.endsWith('.bin'))
  if (save === undefined) throw new Error('nothing was saved')
  const followUp = () => chat(server, model, [...messages, { role: 'assistant', content: first.content }, { role: 'user', content: 'Next?' }])
  return { server, model, dir, save, bytes: await readFile(join(dir, save)), followUp }
}

t.test('qwen35: a save without its checkpoints is restored, not reused, and then seen: a miss, and it is deleted', async (t) => {
  const { server, model, dir, save, bytes, followUp } = await savedConversation(t, 'tiny/miss', 21)
  // As a build without patch 0002 writes it: the state alone.
  await writeFile(join(dir, save), bytes.subarray(0, trailerAt(bytes)))
  const next = await followUp()
  t.equal(server.restored.length, 1, 'it restores')
  t.ok(next.evaluated > next.prompt / 2, `and nothing is reused: ${next.evaluated} of ${next.prompt} evaluated`)
  await until('the miss seen', () => server.missed.length === 1)
  t.match(server.missed[0], /shared \d+ tokens of the \d+ restored with the prompt and reused 0: the runtime evaluated the prompt again/)
  const metrics = await (await fetch(`${server.url}/metrics`)).text()
  t.match(metrics, /llamagate_prompt_caches_total\{model="tiny\/miss",action="miss"\} 1/)
  t.notOk((await readdir(dir)).includes(save), 'the save is deleted')
})

t.test('qwen35: a save whose checkpoints are damaged is refused at the restore; the runtime lives on', async (t) => {
  const { server, model, dir, save, bytes, followUp } = await savedConversation(t, 'tiny/damaged', 22)
  // A checkpoint whose state claims more than the file holds.
  bytes.writeBigUInt64LE(BigInt(bytes.length), trailerAt(bytes) + 12 + 8 + 8)
  await writeFile(join(dir, save), bytes)
  const next = await followUp()
  t.ok(next.prompt > 0, 'answered')
  t.same(server.restored, [], 'not restored')
  const again = await chat(server, model, [{ role: 'user', content: 'Hello' }])
  t.equal(again.content, 'Done', 'the runtime still serves')
})
