/**
 * A streamed response read as it comes, as text: `readUntil` reads on until `check` holds of everything read so far
 * (or throws if the stream ends first), `rest` reads to the end; each returns the whole text read.
 */
export function streamText (res: Response): { readUntil: (what: string, check: (text: string) => boolean) => Promise<string>, rest: () => Promise<string> } {
  const reader = res.body!.getReader()
  const decoder = new TextDecoder()
  let text = ''
  return {
    async readUntil (what, check) {
      while (!check(text)) {
        const { value, done } = await reader.read()
        if (done) throw new Error(`the stream ended before ${what}: ${text}`)
        text += decoder.decode(value, { stream: true })
      }
      return text
    },
    async rest () {
      for (;;) {
        const { value, done } = await reader.read()
        if (done) return text
        text += decoder.decode(value, { stream: true })
      }
    },
  }
}

/** The SSE comment lines of a stream's text (`: ...`), without their colon. */
export function sseComments (text: string): string[] {
  return text.split('\n').filter((l) => l.startsWith(':')).map((l) => l.slice(1).trim())
}

/** The text of a stream before its first SSE data event. */
export function beforeFirstData (text: string): string {
  const at = text.indexOf('data: ')
  return at === -1 ? text : text.slice(0, at)
}
