import { eventBytes, eventData, eventRewrite, type DataRewrite, type EventEdit } from '../../runtimes/index.js'

type Json = Record<string, unknown>

/**
 * OpenAI's answers as its OpenAPI document types them, from what llama-server writes. Fields the document requires
 * and allows to be null are there, null where llama-server has no value (a choice's `logprobs`, a message's
 * `refusal`); a stream's chunks share one `created`; a completions stream's usage comes in a chunk of its own.
 */

/** A whole chat completion with the fields OpenAI requires that llama-server leaves out: null. */
export function chatAnswerToSpec<T> (answer: T): T {
  const choices = (answer as Json).choices
  if (!Array.isArray(choices)) return answer
  for (const choice of choices as Json[]) {
    choice.logprobs ??= null
    const message = choice.message as Json | undefined
    if (message !== undefined && message !== null) {
      message.content ??= null
      message.refusal ??= null
    }
  }
  return answer
}

/** llama-server's whole chat completion (JSON text) as OpenAI's. */
export function chatTextToSpec (text: string): string {
  try {
    return JSON.stringify(chatAnswerToSpec(JSON.parse(text) as Json))
  } catch {
    return text
  }
}

const CREATED = Buffer.from('"created":')

/**
 * An edit that gives every chunk of a stream the first chunk's `created`: llama-server stamps each chunk with the
 * second it was made, OpenAI's every chunk "has the same timestamp". Bytes, not JSON: the number is found after its
 * key (a key in generated text is escaped, so an unescaped `"created":` is the chunk's own) and only a chunk made in
 * a later second is copied.
 */
export function oneCreated (): EventEdit {
  let first: Buffer | null = null
  return (event) => {
    const at = event.indexOf(CREATED)
    if (at === -1) return null
    const start = at + CREATED.length
    let end = start
    while (end < event.length && event[end]! >= 0x30 && event[end]! <= 0x39) end++
    if (first === null) {
      first = Buffer.from(event.subarray(start, end))
      return null
    }
    // Compared where it lies: the same second (nearly every chunk) costs no copy.
    return event.compare(first, 0, first.length, start, end) === 0 ? null : Buffer.concat([event.subarray(0, start), first, event.subarray(end)])
  }
}

/** The rewrite of a chat completion stream: one `created`. */
export function chatStreamRewrite (): DataRewrite {
  return eventRewrite(oneCreated())
}

const USAGE = Buffer.from('"usage":')

/**
 * The rewrite of a text completion stream: one `created`, and, when the request asked for
 * `stream_options.include_usage`, the usage (which llama-server puts on the chunk that finishes) in a last chunk of
 * its own with no choices, as OpenAI sends it. The others carry none: the document types a completion's `usage` as
 * not nullable, where the chat chunk's is.
 */
export function completionStreamRewrite (includeUsage: boolean): DataRewrite {
  const created = oneCreated()
  return eventRewrite((event) => {
    const dated = created(event)
    if (!includeUsage || event.indexOf(USAGE) === -1) return dated
    const parsed = eventData(dated ?? event)
    const usage = parsed?.data.usage
    if (parsed === null || usage === undefined || usage === null) return dated
    const { usage: _moved, ...finish } = parsed.data
    return Buffer.concat([eventBytes(finish), eventBytes({ ...finish, choices: [], usage })])
  })
}
