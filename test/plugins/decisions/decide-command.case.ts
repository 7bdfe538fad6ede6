import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { tempDir } from '../../helpers/app.js'
import { serveRealisticModels } from '../../helpers/inference.js'
import { runCliHere } from '../../helpers/serve-process.js'

t.test('llamagate decide: questions from flags or a request file, answers with bars; its errors say why', async (t) => {
  const { url } = await serveRealisticModels(t, { 'acme/openjev': 'openjev' })
  const cli = (...args: string[]): ReturnType<typeof runCliHere> => runCliHere([...args, '--host', url])

  const asked = await cli('decide', 'acme/openjev', 'My parcel never came and nobody answers.', '--yes-no', 'Is the customer angry?', '--choice', 'Which team?=refunds,shipping,sales', '--score', 'How urgent?=low,high')
  t.equal(asked.code, 0, asked.stderr)
  t.match(asked.stdout, /^q1: Is the customer angry\?\n {2}→ (yes|no)\n {4}yes {2}0\.\d{3} {2}[█▏▎▍▌▋▊▉]*\n {4}no {3}0\.\d{3} {2}[█▏▎▍▌▋▊▉]*\n/, 'a yes/no answer, a bar a probability')
  t.match(asked.stdout, /\nq2: Which team\?\n {2}→ (refunds|shipping|sales), confidence 0\.\d\d\n {4}refunds {3}0\.\d{3} .*\n {4}shipping {2}0\.\d{3} .*\n {4}sales {5}0\.\d{3}/, 'a choice: its verdict and confidence, every option')
  t.match(asked.stdout, /\nq3: How urgent\?\n {2}→ [01]\.\d\d of 1, confidence \d\.\d\d\n {4}0 low {3}0\.\d{3} .*\n {4}1 high {2}0\.\d{3}/, 'a score: its expected level')
  t.match(asked.stdout, /\n\(acme\/openjev, \d+ prompt tokens\)\n$/)

  const file = join(await tempDir(t), 'request.json')
  await writeFile(file, JSON.stringify({ state: { ticket: 'late' }, questions: { late: { type: 'noul', instructions: 'Is it late?' } } }))
  const json = await cli('decide', 'acme/openjev', '--request', file, '--json')
  t.equal(json.code, 0, json.stderr)
  t.match(JSON.parse(json.stdout), { model: 'acme/openjev', answers: { late: { type: 'noul', noul: Number } } }, '--request FILE and --json: the server\'s answer')

  const none = await cli('decide', 'acme/openjev', 'text')
  t.equal(none.code, 2, 'no question: a usage error')
  t.match(none.stderr, /ask at least one question/)
  const badChoice = await cli('decide', 'acme/openjev', 'text', '--choice', 'Which?=one')
  t.equal(badChoice.code, 2)
  t.match(badChoice.stderr, /at least two options/)
  const tooMany = await cli('decide', 'acme/openjev', 'text', '--choice', `Which?=${Array.from({ length: 53 }, (_, i) => `o${i}`).join(',')}`)
  t.equal(tooMany.code, 1, 'the server\'s refusal: exit 1')
  t.match(tooMany.stderr, /"criteria" has 53 options, at most 52 are supported/, 'in its words')
})
