import t from 'tap'
import { post, serveRealisticModels } from '../../helpers/inference.js'

t.test('llama-server\'s own routes with a model named: /tokenize, /detokenize, /apply-template, /infill', async (t) => {
  const { url } = await serveRealisticModels(t, { 'acme/coder': 'coder', 'acme/openjev': 'openjev' })
  const tokenized = await post(`${url}/tokenize`, { model: 'acme/coder', content: 'hello world', with_pieces: true })
  t.equal(tokenized.status, 200)
  const { tokens } = await tokenized.json() as { tokens: Array<{ id: number, piece: string }> }
  t.same(tokens.map((p) => p.piece).join(''), 'hello world', 'the model\'s own tokens, with their pieces')
  const detokenized = await (await post(`${url}/detokenize`, { model: 'acme/coder', tokens: tokens.map((p) => p.id) })).json() as { content: string }
  t.equal(detokenized.content, 'hello world', 'and back')
  const applied = await (await post(`${url}/apply-template`, { model: 'acme/coder', messages: [{ role: 'user', content: 'hi' }] })).json() as { prompt: string }
  t.match(applied.prompt, /<\|im_start\|>user\nhi<\|im_end\|>\n<\|im_start\|>assistant\n$/, 'the model\'s chat template, rendered by its runtime')
  const filled = await post(`${url}/infill`, { model: 'acme/coder', input_prefix: 'def f(x):\n    ', input_suffix: '\n', n_predict: 4 })
  t.equal(filled.status, 200)
  t.match(await filled.json(), { content: ' return' }, 'the gap filled between the FIM tokens')
  const decision = await (await post(`${url}/tokenize`, { model: 'acme/openjev', content: 'A' })).json() as { tokens: number[] }
  t.equal(decision.tokens.length, 1, 'a decision model\'s vocabulary too')

  const cases: Array<[string, string, unknown, number, RegExp]> = [
    ['no model', '/tokenize', { content: 'x' }, 400, /model/],
    ['an unknown model', '/detokenize', { model: 'acme/none', tokens: [1] }, 404, /not found/],
    ['a streamed infill', '/infill', { model: 'acme/coder', input_prefix: 'a', stream: true }, 400, /answers whole/],
  ]
  for (const [what, path, body, status, message] of cases) {
    const res = await post(`${url}${path}`, body)
    t.equal(res.status, status, `${what}: ${status}`)
    t.match(await res.json(), { error: { code: status, message, type: String } }, `${what}: in llama-server's shape`)
  }
})
