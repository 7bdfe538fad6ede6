import t from 'tap'
import { d1Labels } from '../../../plugins/decisions/d1-labels.js'
import type { DecisionQuestion } from '../../../plugins/decisions/decision-questions.js'

// d1's labels as llama.cpp's server gives them, against a made-up vocabulary: which forms are one token decides
// each group, and a choice's code falls back along llama.cpp's pool.

function vocabulary (singles: string[]): (text: string) => Promise<number | null> {
  const ids = new Map(singles.map((s, i) => [s, 100 + i]))
  return async (text) => ids.get(text) ?? null
}

const question = (type: DecisionQuestion['type'], keys: string[]): DecisionQuestion => ({ id: 'q', type, instructions: 'x', options: keys.map((key) => ({ key, description: null })) })

t.test('a noul: the yes and no forms that are one token; a score: its digits', async (t) => {
  const single = vocabulary(['yes', 'Yes', 'no', 'NO', '0', '1', '2'])
  const noul = await d1Labels(question('noul', ['true', 'false']), single)
  t.same(noul, { texts: ['true', 'false'], groups: [[100, 101], [102, 103]] }, 'YES and No are not one token here: left out')
  const score = await d1Labels(question('score', ['0', '1', '2']), single)
  t.same(score, { texts: ['0', '1', '2'], groups: [[104], [105], [106]] })
  await t.rejects(d1Labels(question('noul', ['true', 'false']), vocabulary(['no'])), /decision label is not a single token: true/)
})

t.test('a choice: its own single-letter keys, else A, B, ...; each with its spaced form; a code not one token or taken falls back to the pool', async (t) => {
  const single = vocabulary(['A', ' A', 'B', 'C', ' C', 'x', 'y', 'D', '00'])
  t.same(await d1Labels(question('choice', ['x', 'y']), single), { texts: ['x', 'y'], groups: [[105], [106]] }, 'single letters: the keys themselves')
  t.same(await d1Labels(question('choice', ['refund', 'ship', 'wait']), single), { texts: ['A', 'B', 'C'], groups: [[100, 101], [102], [103, 104]] })
  // 'E' is no token here: the pool's first free code takes its place (A, B, C, D are taken).
  const five = await d1Labels(question('choice', ['a1', 'b1', 'c1', 'd1', 'e1']), single)
  t.same(five.texts, ['A', 'B', 'C', 'D', '00'])
  await t.rejects(d1Labels(question('choice', ['a1', 'b1']), vocabulary(['A'])), /no single-token label left for 2 options/)
})
