import fc from 'fast-check'
import t from 'tap'
import { exceedsJsonDepth } from '../../core/base/json-depth.js'

/** The plain reading, character by character: what the fast scan must agree with on any text. */
function reference (text: string, limit: number): boolean {
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text[i]
    if (inString) {
      if (c === '\\') i++
      else if (c === '"') inString = false
    } else if (c === '"') inString = true
    else if (c === '[' || c === '{') { if (++depth > limit) return true } else if (c === ']' || c === '}') depth--
  }
  return false
}

t.test('brackets inside strings do not count, escaped quotes do not end a string', async (t) => {
  t.equal(exceedsJsonDepth('[[["a"]]]', 3), false)
  t.equal(exceedsJsonDepth('[[[["a"]]]]', 3), true)
  t.equal(exceedsJsonDepth(JSON.stringify({ content: '[[[[[[{{{{' }), 2), false, 'brackets in a string')
  t.equal(exceedsJsonDepth(JSON.stringify({ content: 'say "[[[[" \\' }), 2), false, 'escaped quotes and a backslash before the closing quote')
  t.equal(exceedsJsonDepth(`{"a":"x\\\\"}${'['.repeat(5)}`, 3), true, 'an even run of backslashes leaves the quote closing')
  t.equal(exceedsJsonDepth(`{"a":"x\\"${'['.repeat(5)}`, 3), false, 'an escaped quote leaves the string open to the end')
  t.equal(exceedsJsonDepth(`["${'['.repeat(9)}`, 3), false, 'an unterminated string holds the rest')
})

t.test('agrees with the character-by-character reading on any text', async (t) => {
  const text = fc.stringMatching(/^[[\]{}"\\a:,]{0,60}$/)
  const json = fc.jsonValue({ maxDepth: 8 }).map((v) => JSON.stringify(v))
  fc.assert(fc.property(fc.oneof(text, json), fc.integer({ min: 0, max: 6 }), (s, limit) => exceedsJsonDepth(s, limit) === reference(s, limit)), { numRuns: 5000 })
  t.pass('5000 texts')
})
