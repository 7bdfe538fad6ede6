import { eventBytes, eventData, eventRewrite, type DataRewrite } from '../../runtimes/index.js'

type Json = Record<string, unknown>

const DELTA = Buffer.from('event: content_block_delta\n')

/**
 * Anthropic's answers as its SDK's types have them (src/resources/messages/messages.ts), from what llama-server
 * writes: the fields a `Message`, its `Usage`, its blocks and its stream's events must have, null where llama-server
 * has no value, and a stream's blocks one after the other (each stopped before the next starts, where llama-server
 * keeps them all open to its end).
 */

/** `Usage` whole: what llama-server counts (input, cached, output), null for what nothing here has. */
export function messageUsage (usage: Json | undefined): Json {
  return {
    input_tokens: usage?.input_tokens ?? 0,
    output_tokens: usage?.output_tokens ?? 0,
    cache_read_input_tokens: usage?.cache_read_input_tokens ?? 0,
    // A slot's cache is written as a prompt is read, at no further cost: nothing counts as cache creation.
    cache_creation_input_tokens: usage?.cache_creation_input_tokens ?? 0,
    cache_creation: usage?.cache_creation ?? null,
    inference_geo: usage?.inference_geo ?? null,
    output_tokens_details: usage?.output_tokens_details ?? null,
    server_tool_use: usage?.server_tool_use ?? null,
    service_tier: usage?.service_tier ?? null,
  }
}

/** A content block as the types have it: a text's `citations`, a thinking's `signature`, a tool call's `input` and `caller`. */
export function blockToSpec (block: Json): Json {
  switch (block.type) {
    case 'text': return { citations: null, ...block }
    case 'thinking': return { signature: '', ...block }
    case 'tool_use': return { input: {}, caller: { type: 'direct' }, ...block }
    default: return block
  }
}

/** A whole `Message` (or the one message_start carries) with its nullable fields and its usage whole. */
export function messageToSpec (message: Json): Json {
  return {
    container: null,
    stop_details: null,
    ...message,
    content: Array.isArray(message.content) ? (message.content as Json[]).map(blockToSpec) : message.content,
    usage: messageUsage(message.usage as Json | undefined),
  }
}

/** llama-server's whole Messages answer (JSON text) as Anthropic's. */
export function messageTextToSpec (text: string): string {
  try {
    const answer = JSON.parse(text) as Json
    return JSON.stringify(answer.type === 'message' ? messageToSpec(answer) : answer)
  } catch {
    return text
  }
}

/**
 * The rewrite of a Messages stream: message_start's message and each block's start as above; a block still open when
 * the next starts is stopped first (a thinking block after its empty `signature_delta`, which llama-server sends at
 * the end), and the stops llama-server sends at the end for those are left out; message_delta gets its `delta`'s
 * nullable fields and a `MessageDeltaUsage` whole, its input counts those of message_start.
 */
export function messageStreamRewrite (): DataRewrite {
  let open: { index: number, type: string } | null = null
  const stopped = new Set<number>()
  let start: Json = {}
  return eventRewrite((event) => {
    // Text, thinking and arguments deltas (nearly every event) stay as they are unless a block was stopped early.
    if (stopped.size === 0 && event.subarray(0, DELTA.length).equals(DELTA)) return null
    const parsed = eventData(event)
    if (parsed === null) return null
    const { data } = parsed
    switch (data.type) {
      case 'message_start': {
        const message = messageToSpec(data.message as Json)
        start = message.usage as Json
        return eventBytes({ ...data, message }, 'message_start')
      }
      case 'content_block_start': {
        const index = data.index as number
        const before = open !== null && open.index !== index ? stopBlock(open, stopped) : []
        const block = blockToSpec(data.content_block as Json)
        open = { index, type: String(block.type) }
        return Buffer.concat([...before, eventBytes({ ...data, content_block: block }, 'content_block_start')])
      }
      case 'content_block_delta':
        return stopped.has(data.index as number) && (data.delta as Json | undefined)?.type === 'signature_delta' ? Buffer.alloc(0) : null
      case 'content_block_stop':
        if (stopped.has(data.index as number)) return Buffer.alloc(0)
        if (open?.index === data.index) open = null
        return null
      case 'message_delta': {
        const usage = data.usage as Json | undefined
        return eventBytes({
          ...data,
          delta: { container: null, stop_details: null, ...(data.delta as Json) },
          usage: {
            input_tokens: start.input_tokens ?? null,
            cache_read_input_tokens: start.cache_read_input_tokens ?? null,
            cache_creation_input_tokens: start.cache_creation_input_tokens ?? null,
            output_tokens_details: null,
            server_tool_use: null,
            ...usage,
          },
        }, 'message_delta')
      }
      default:
        return null
    }
  })
}

// The events that stop `block` before another starts: a thinking block's signature first, as Anthropic's streams have it.
function stopBlock (block: { index: number, type: string }, stopped: Set<number>): Buffer[] {
  stopped.add(block.index)
  const signature = block.type === 'thinking' ? [eventBytes({ type: 'content_block_delta', index: block.index, delta: { type: 'signature_delta', signature: '' } }, 'content_block_delta')] : []
  return [...signature, eventBytes({ type: 'content_block_stop', index: block.index }, 'content_block_stop')]
}
