import { toolCallIndex } from '../../../runtimes/index.js'
import { messageId, messagesUsage, stopReasonOf, toolUseId, type ChatAnswer, type ChatUsage } from './messages-answer.js'

type BlockKind = 'thinking' | 'text' | 'tool_use'

/**
 * Turns the chunks of a streamed chat completion, one by one, into Anthropic's Messages stream (its "Streaming
 * Messages" reference): `message_start`, then each content block as `content_block_start`, its deltas
 * (`thinking_delta`, `text_delta`, `input_json_delta` with the call's arguments as they come) and
 * `content_block_stop`, then `message_delta` with why it stopped and the usage, then `message_stop`. Blocks go
 * one after the other, each stopped before the next starts, as the SDKs' accumulators expect (they add a delta
 * to the block at its index, and take the last block as the one a stop ends).
 *
 * The input tokens are known only at the end (chat streams say their usage last): message_start says 0 unless
 * the first chunk already had them, and message_delta gives the whole usage, which the SDKs take over.
 */
export class MessagesEvents {
  private started = false
  private open: { kind: BlockKind, index: number } | null = null
  private blocks = 0
  /** Each tool call's block, by the call's index in the chat stream. */
  private readonly calls = new Map<number, number>()
  private finish: string | null = null
  private matched: unknown = null
  private usage: ChatUsage | null = null

  constructor (private readonly model: string, private readonly stopSequences: readonly string[]) {}

  /** The events one chunk makes, as SSE text ('' when it adds none); the first chunk starts the message. */
  push (chunk: ChatAnswer): string {
    let out = ''
    if (chunk.usage) this.usage = chunk.usage
    if (!this.started) {
      this.started = true
      out += event('message_start', {
        type: 'message_start',
        message: { id: messageId(chunk.id), type: 'message', role: 'assistant', model: this.model, content: [], stop_reason: null, stop_sequence: null, usage: messagesUsage(this.usage) },
      })
    }
    const choice = chunk.choices?.[0]
    if (choice === undefined) return out
    const delta = choice.delta ?? {}
    const thinking = delta.reasoning_content ?? delta.reasoning
    if (typeof thinking === 'string' && thinking !== '') {
      out += this.into('thinking', { type: 'thinking', thinking: '', signature: '' })
      out += this.delta(this.open!.index, { type: 'thinking_delta', thinking })
    }
    if (typeof delta.content === 'string' && delta.content !== '') {
      out += this.into('text', { type: 'text', text: '' })
      out += this.delta(this.open!.index, { type: 'text_delta', text: delta.content })
    }
    for (const [at, call] of (delta.tool_calls ?? []).entries()) {
      const key = toolCallIndex(call.index, at)
      let index = this.calls.get(key)
      if (index === undefined) {
        out += this.start('tool_use', { type: 'tool_use', id: toolUseId(call.id), name: call.function?.name ?? '', input: {} })
        index = this.open!.index
        this.calls.set(key, index)
      }
      const args = call.function?.arguments
      const partial = typeof args === 'string' ? args : args !== undefined && args !== null ? JSON.stringify(args) : ''
      // A call's arguments after another call began (no engine seen does it) still go to that call's block.
      if (partial !== '') out += this.delta(index, { type: 'input_json_delta', partial_json: partial })
    }
    if (choice.finish_reason) this.finish = choice.finish_reason
    const matched = choice.stop_reason ?? choice.matched_stop
    if (matched !== undefined && matched !== null) this.matched = matched
    return out
  }

  /**
   * The events that end the message: the open block's stop, message_delta, message_stop.
   * @throws when the chat stream ended without saying why it stopped: the upstream broke off
   */
  end (): string {
    if (this.finish === null) throw new Error('the runtime ended the stream early')
    const usage = this.usage !== null ? messagesUsage(this.usage) : { output_tokens: 0 }
    return this.close() + event('message_delta', {
      type: 'message_delta',
      delta: stopReasonOf(this.finish, this.matched, this.stopSequences, this.calls.size > 0),
      usage,
    }) + event('message_stop', { type: 'message_stop' })
  }

  /** Into a block of `kind`: the open one if it is of that kind, else a new one. */
  private into (kind: BlockKind, block: Record<string, unknown>): string {
    return this.open?.kind === kind ? '' : this.start(kind, block)
  }

  private start (kind: BlockKind, block: Record<string, unknown>): string {
    const out = this.close()
    this.open = { kind, index: this.blocks++ }
    return out + event('content_block_start', { type: 'content_block_start', index: this.open.index, content_block: block })
  }

  private close (): string {
    if (this.open === null) return ''
    const { kind, index } = this.open
    this.open = null
    // Anthropic's thinking blocks end with their signature; an upstream has none to give (llama-server sends "" too).
    const signature = kind === 'thinking' ? this.delta(index, { type: 'signature_delta', signature: '' }) : ''
    return signature + event('content_block_stop', { type: 'content_block_stop', index })
  }

  private delta (index: number, delta: Record<string, unknown>): string {
    return event('content_block_delta', { type: 'content_block_delta', index, delta })
  }
}

function event (name: string, data: unknown): string {
  return `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`
}
