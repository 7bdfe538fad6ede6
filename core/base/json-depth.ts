const QUOTE = 0x22
const BACKSLASH = 0x5c

/**
 * How deep JSON text nests, counted up to `limit` (then it stops looking): brackets inside strings do not count.
 * A scan of the text, cheap next to parsing it: a string is crossed with indexOf rather than character by
 * character, as a long prompt is almost all string.
 */
export function exceedsJsonDepth (text: string, limit: number): boolean {
  let depth = 0
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === QUOTE) {
      i = stringEnd(text, i)
      if (i < 0) return false // unterminated: the parser refuses it
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > limit) return true
    } else if (c === 0x5d || c === 0x7d) {
      depth--
    }
  }
  return false
}

/** Where the string opened at `open` closes: the next quote not escaped by an odd run of backslashes; -1 if none. */
function stringEnd (text: string, open: number): number {
  let end = open
  for (;;) {
    end = text.indexOf('"', end + 1)
    if (end < 0) return -1
    let slashes = 0
    while (text.charCodeAt(end - 1 - slashes) === BACKSLASH) slashes++
    if (slashes % 2 === 0) return end
  }
}
