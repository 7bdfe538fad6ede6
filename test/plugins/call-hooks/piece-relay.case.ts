import t from 'tap'
import { CallHooks } from '../../../core/platform/call-hook-registry.js'
import type { CallHook } from '../../../core/platform/call-hooks.js'
import { HookedCall } from '../../../plugins/call-hooks/hooked-call.js'
import type { Lease } from '../../../plugins/leases/lease.js'
import type { ModelEndpoint, RelayProgress, RelaySink } from '../../../runtimes/index.js'

// A passed-through stream with call hooks (plugins/call-hooks/piece-relay.ts): the events the hooks leave alone reach
// the client as the model's server wrote them, byte for byte; only an event a hook changed is written again. The
// model's server here is an endpoint that writes given bytes, read by the relay in the pieces given (an event may
// be split across two), and parses the same bytes for the events path.

const OPENAI = [
  'data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":null}}],"x_vendor":{"score":1.0,"big":12345678901234567890}}\n\n',
  'data: {"id":"c1", "choices" : [{"index":0,"delta":{"content":"caf\\u00e9 "}}],"created":1}\n\n',
  'data: {"id":"c1","choices":[{"index":0,"delta":{"content":"secret"}}],"timings":{"predicted_ms":2.50}}\n\n',
  'data: {"id":"c1","choices":[{"index":0,"delta":{"content":" end"}}]}\n\n',
  'data: {"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"length"}],"timings":{"prompt_n":3,"predicted_n":3}}\n\n',
  'data: [DONE]\n\n',
]

/** A model's server that answers a stream with `events`, relayed in reads that split each event in two when `split`. */
function endpoint (events: string[], split: boolean): ModelEndpoint & { aborted: () => boolean } {
  let aborted = false
  const reads = split ? events.flatMap((e) => [e.slice(0, 20), e.slice(20)]) : events
  return {
    aborted: () => aborted,
    post: () => { throw new Error('not asked') },
    postJson: () => { throw new Error('not asked') },
    events: async () => (async function * () {
      for (const event of events) {
        const data = event.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.replace(/^data: ?/, '')).join('\n')
        if (data === '[DONE]') return
        if (data !== '') yield JSON.parse(data)
      }
    })(),
    relay: async (_path, _payload, sink: RelaySink, progress: RelayProgress, signal: AbortSignal) => {
      sink.open()
      for (const read of reads) {
        // A read at a time, as a socket gives them: the hooks may stop the relay in between.
        await new Promise((resolve) => setImmediate(resolve))
        if (signal.aborted) {
          aborted = true
          throw signal.reason
        }
        const bytes = Buffer.from(read)
        progress.tail = Buffer.concat([progress.tail, bytes]).subarray(-progress.tailBytes)
        if (!sink.writeRaw(progress.rewrite?.push(bytes) ?? bytes)) await sink.drained()
      }
    },
  }
}

/** Streams `events` through a call with `hook` (or hooks, in order): what the client got, the surface's progress, and the endpoint. */
async function relayed (hook: Omit<CallHook, 'name'> | Array<Omit<CallHook, 'name'>>, events: string[], path = '/v1/chat/completions', split = false) {
  const hooks = new CallHooks(1000)
  for (const [i, one] of (Array.isArray(hook) ? hook : [hook]).entries()) hooks.add({ name: `test-${i}`, ...one })
  const call = new HookedCall({ hooks, surface: 'openai', route: path, key: null, grant: null, log: { error: () => {} } }, 'm', true)
  const server = endpoint(events, split)
  const lease = call.lease({ endpoint: server, signal: new AbortController().signal, release: () => {} } as unknown as Lease)
  const written: Buffer[] = []
  const sink: RelaySink = { open: () => {}, chunkedSocket: () => null, writeRaw: (chunk) => { written.push(chunk); return true }, drained: async () => {} }
  let counted = 0
  const progress: RelayProgress = { tailBytes: 256, tail: Buffer.alloc(0), onEvents: (n) => { counted += n } }
  await lease.endpoint.relay(path, JSON.stringify({ model: 'm', stream: true }), sink, progress, lease.signal)
  call.end()
  return { text: Buffer.concat(written).toString(), progress, counted, server }
}

t.test('a piece hook that changes nothing leaves the stream as the model\'s server wrote it, byte for byte', async (t) => {
  for (const split of [false, true]) {
    const seen: string[] = []
    let after = ''
    const { text, counted } = await relayed({ piece (piece) { seen.push(piece.text) }, after (outcome) { after = outcome.text } }, OPENAI, undefined, split)
    t.equal(text, OPENAI.join(''), `unmodelled fields, spacing, escapes and numbers untouched${split ? ' (events split across reads)' : ''}`)
    t.same(seen, ['café ', 'secret', ' end'], 'every piece offered')
    t.equal(after, 'café secret end', 'the after hook read the answer')
    t.equal(counted, OPENAI.length, 'each event counted once')
  }
})

t.test('comments, events of several lines and short ones pass as they came, their pieces offered', async (t) => {
  const events = [': ping\n\n', 'data:{"choices":[{"index":0,"delta":{"content":"a"}}]}\n\n', 'id: 7\ndata: {"choices":[{"index":0,\ndata: "delta":{"content":"b"}}]}\n\n', 'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n', ':\n\n']
  const seen: string[] = []
  const { text } = await relayed({ piece (piece) { seen.push(piece.text) } }, events)
  t.equal(text, events.join(''))
  t.same(seen, ['a', 'b'])
})

t.test('only an event a hook changed is written again; a cut stops the stream and ends it as a finished one', async (t) => {
  for (const later of [false, true]) {
    // A hook that answers with a promise holds the relay back, and changes the same.
    const answer = <T>(value: T): T | Promise<T> => later ? new Promise((resolve) => setTimeout(() => resolve(value), 2)) : value
    const edited = await relayed({ piece (piece) { if (piece.text === 'secret') piece.text = '[cut]'; return answer(undefined) } }, OPENAI, undefined, later)
    t.equal(edited.text, [OPENAI[0], OPENAI[1], 'data: {"id":"c1","choices":[{"index":0,"delta":{"content":"[cut]"}}],"timings":{"predicted_ms":2.5}}\n\n', ...OPENAI.slice(3)].join(''), `the changed event alone written again${later ? ' (a promise)' : ''}`)
    const cut = await relayed({ piece (piece) { return answer(piece.text === 'secret' ? 'cut' : undefined) } }, OPENAI, undefined, later)
    t.equal(cut.text, [OPENAI[0], OPENAI[1], 'data: {"id":"c1","created":1,"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n', 'data: [DONE]\n\n'].join(''), 'the events before the cut as they came, then the end')
    t.ok(cut.server.aborted(), 'the model\'s server was told to stop')
    t.match(cut.progress.tail.toString(), /"finish_reason":"stop"\}\]\}\n\ndata: \[DONE\]\n\n$/, 'the tail is what the client got')
  }
})

t.test('what an end hook releases goes out before the finish, through the piece hooks after it', async (t) => {
  for (const later of [false, true]) {
    const answer = <T>(value: T): T | Promise<T> => later ? Promise.resolve(value) : value
    // The first holds back the answer's last piece and releases it, changed, at the end; the second sees what went.
    const holding = (last: string, released: string): Omit<CallHook, 'name'> => ({
      piece (piece) { if (piece.text === last) piece.text = '' },
      end: () => answer(released),
    })
    const seen: string[] = []
    let after = ''
    const watching: Omit<CallHook, 'name'> = { piece (piece) { seen.push(piece.text) }, after (outcome) { after = outcome.text } }
    const openai = await relayed([holding(' end', ' END'), watching], OPENAI, undefined, later)
    t.equal(openai.text, [
      ...OPENAI.slice(0, 3),
      'data: {"id":"c1","choices":[{"index":0,"delta":{"content":""}}]}\n\n',
      'data: {"id":"c1","choices":[{"index":0,"delta":{"content":" END"},"finish_reason":null}]}\n\n',
      'data: {"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"length"}],"timings":{"prompt_n":3,"predicted_n":3}}\n\n',
      'data: [DONE]\n\n',
    ].join(''), `released in an event of its own before the finish${later ? ' (a promise)' : ''}`)
    t.same(seen, ['café ', 'secret', '', ' END'], 'the release passed the piece hook after the one that held it')
    t.equal(after, 'café secret END', 'the after hook read the answer as it went')
    t.equal(openai.counted, OPENAI.length + 1, 'the added event counted')

    const anthropic = [
      'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n',
      'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"call 555"}}\n\n',
      'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n',
      'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"}}\n\n',
      'event: message_stop\ndata: {"type":"message_stop"}\n\n',
    ]
    const messages = await relayed([{ piece (piece) { piece.text = piece.text.replace(' 555', '') }, end: () => answer(' [phone]') }], anthropic, '/v1/messages', later)
    t.equal(messages.text, [
      anthropic[0], anthropic[1]!.replace('call 555', 'call'), anthropic[2],
      'event: content_block_start\ndata: {"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}\n\n',
      'event: content_block_delta\ndata: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":" [phone]"}}\n\n',
      'event: content_block_stop\ndata: {"type":"content_block_stop","index":1}\n\n',
      ...anthropic.slice(3),
    ].join(''), 'Anthropic\'s: a text block of its own, before the message says it stopped')

    const cut = await relayed({ piece (piece) { return piece.text === 'secret' ? 'cut' : undefined }, end: () => answer('held') }, OPENAI, undefined, later)
    t.equal(cut.text, [
      OPENAI[0], OPENAI[1],
      'data: {"id":"c1","created":1,"choices":[{"index":0,"delta":{"content":"held"},"finish_reason":null}]}\n\n',
      'data: {"id":"c1","created":1,"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n', 'data: [DONE]\n\n',
    ].join(''), 'a cut answer\'s end is told too: the release goes before its finish')
    const dropped = await relayed([{ end: () => answer('secret') }, { piece (piece) { return piece.text === 'secret' ? 'cut' : undefined } }], OPENAI.slice(3), undefined, later)
    t.equal(dropped.text, OPENAI.slice(3).join(''), 'a release a later piece hook cut is dropped')
  }
})

t.test('llama-server\'s usual chat token, read without parsing: changed in place, the rest of its bytes kept', async (t) => {
  const token = (text: string): string => `data: {"choices":[{"finish_reason":null,"index":0,"delta":{"content":"${text}"}}],"created":1795767263,"id":"c2","model":"m","object":"chat.completion.chunk","x":1.0}\n\n`
  const events = [token('a \\"quoted\\" \\u0012'), token('secret'), token(''), token('tail'), 'data: {"choices":[{"finish_reason":"length","index":0,"delta":{}}],"created":1795767263,"id":"c2","timings":{"predicted_n":3}}\n\n', 'data: [DONE]\n\n']
  for (const later of [false, true]) {
    const answer = <T>(value: T): T | Promise<T> => later ? Promise.resolve(value) : value
    const seen: string[] = []
    const edited = await relayed({ piece (piece) { seen.push(piece.text); if (piece.text === 'secret') piece.text = 'a "new" one'; return answer(undefined) } }, events, undefined, later)
    t.same(seen, ['a "quoted" \u0012', 'secret', 'tail'], 'the texts, unescaped')
    t.equal(edited.text, events.join('').replace('"content":"secret"', '"content":"a \\"new\\" one"'), 'only the text changed')
    const cut = await relayed({ piece (piece) { return answer(piece.text === 'tail' ? 'cut' : undefined) } }, events, undefined, later)
    t.equal(cut.text, [...events.slice(0, 3), 'data: {"id":"c2","object":"chat.completion.chunk","created":1795767263,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n', 'data: [DONE]\n\n'].join(''), 'a cut ends it after the last token sent')
  }
})

t.test('Anthropic\'s named events: kept as they came, a changed one written again under its name', async (t) => {
  const events = [
    'event: message_start\ndata: {"type":"message_start","message":{"id":"m1","usage":{"input_tokens":3,"output_tokens":1}}}\n\n',
    'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n',
    'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"secret"}}\n\n',
    'event: content_block_delta\ndata: {"type":"content_block_delta","index":12,"delta":{"type":"text_delta","text":"\\"q\\" \\n"}}\n\n',
    'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n',
    'event: message_stop\ndata: {"type":"message_stop"}\n\n',
  ]
  const seen: string[] = []
  const kept = await relayed({ piece (piece) { seen.push(piece.text) } }, events, '/v1/messages')
  t.equal(kept.text, events.join(''))
  t.same(seen, ['secret', '"q" \n'])
  const edited = await relayed({ piece (piece) { piece.text = 'x' } }, events, '/v1/messages')
  const x = (index: number): string => `event: content_block_delta\ndata: {"type":"content_block_delta","index":${index},"delta":{"type":"text_delta","text":"x"}}\n\n`
  t.equal(edited.text, [...events.slice(0, 2), x(0), x(12), ...events.slice(4)].join(''))
})

t.test('an event that comes in many reads is held as they came (counted, for the relay to bound), joined once', async (t) => {
  const hooks = new CallHooks(1000)
  const seen: number[] = []
  hooks.add({ name: 'test', piece (piece) { seen.push(piece.text.length) } })
  const call = new HookedCall({ hooks, surface: 'openai', route: '/v1/chat/completions', key: null, grant: null, log: { error: () => {} } }, 'm', true)
  const piece = Buffer.alloc(64 << 10, 0x61)
  let held = 0
  let cpuMs = 0
  const server: ModelEndpoint = {
    post: () => { throw new Error('not asked') },
    postJson: () => { throw new Error('not asked') },
    events: () => { throw new Error('not asked') },
    relay: async (_path, _payload, sink: RelaySink) => {
      sink.open()
      sink.writeRaw(Buffer.from('data: {"choices":[{"index":0,"delta":{"content":"'))
      const cpu = process.cpuUsage()
      // 64 MiB in 64 KiB reads: joined at every read, that is 32 GiB copied.
      for (let i = 0; i < 1024; i++) sink.writeRaw(piece)
      cpuMs = (process.cpuUsage(cpu).user + process.cpuUsage(cpu).system) / 1000
      held = sink.heldBytes ?? 0
      sink.writeRaw(Buffer.from('"}}]}\n\n' + OPENAI.at(-1)))
    },
  }
  const lease = call.lease({ endpoint: server, signal: new AbortController().signal, release: () => {} } as unknown as Lease)
  let bytes = 0
  const sink: RelaySink = { open: () => {}, chunkedSocket: () => null, writeRaw: (chunk) => { bytes += chunk.length; return true }, drained: async () => {} }
  await lease.endpoint.relay('/v1/chat/completions', '{"model":"m","stream":true}', sink, { tailBytes: 64, tail: Buffer.alloc(0) }, lease.signal)
  call.end()
  t.equal(held, 49 + 1024 * piece.length, 'every byte of the unended event counted')
  t.ok(cpuMs < 2000, `held in ${Math.round(cpuMs)} ms of CPU`)
  t.same(seen, [1024 * piece.length], 'its piece offered once, whole')
  t.equal(bytes, 49 + 1024 * piece.length + 7 + OPENAI.at(-1)!.length, 'and written on as it came')
})
