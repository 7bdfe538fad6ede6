import t from 'tap'
import { mergeRuntimeSeries } from '../../../plugins/metrics/runtime-series.js'

const RUNTIME = [
  '# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed.',
  '# TYPE llamacpp:prompt_tokens_total counter',
  'llamacpp:prompt_tokens_total 12',
  '# HELP llamacpp:spec_decode_num_accepted_tokens_per_pos_total Accepted tokens per draft position',
  '# TYPE llamacpp:spec_decode_num_accepted_tokens_per_pos_total counter',
  'llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position="0"} 3',
  '',
].join('\n')

t.test('each sample gets the runtime\'s labels; one family from two runtimes is written once', async (t) => {
  const text = mergeRuntimeSeries([
    { text: RUNTIME, labels: { model: 'acme/a', purpose: 'generate' } },
    { text: RUNTIME.replace(' 12', ' 5'), labels: { model: 'acme/b', purpose: 'embed' } },
  ])
  t.equal(text, [
    '# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed.',
    '# TYPE llamacpp:prompt_tokens_total counter',
    'llamacpp:prompt_tokens_total{model="acme/a",purpose="generate"} 12',
    'llamacpp:prompt_tokens_total{model="acme/b",purpose="embed"} 5',
    '# HELP llamacpp:spec_decode_num_accepted_tokens_per_pos_total Accepted tokens per draft position',
    '# TYPE llamacpp:spec_decode_num_accepted_tokens_per_pos_total counter',
    'llamacpp:spec_decode_num_accepted_tokens_per_pos_total{model="acme/a",purpose="generate",position="0"} 3',
    'llamacpp:spec_decode_num_accepted_tokens_per_pos_total{model="acme/b",purpose="embed",position="0"} 3',
    '',
  ].join('\n'))
})

t.test('a histogram\'s samples stay in their family; untyped samples, empty braces and odd values', async (t) => {
  const text = mergeRuntimeSeries([{
    text: '# TYPE h histogram\nh_bucket{le="1"} 1\nh_sum 2\nh_count 1\n# a comment\nloose{} 4\n\n',
    labels: { model: 'a "quoted" \\ name\n' },
  }])
  const m = 'model="a \\"quoted\\" \\\\ name\\n"'
  t.equal(text, `# TYPE h histogram\nh_bucket{${m},le="1"} 1\nh_sum{${m}} 2\nh_count{${m}} 1\nloose{${m}} 4\n`)
  t.equal(mergeRuntimeSeries([]), '', 'no runtime, no text')
})

t.test('values llama-server prints with C++ streams (nan, -nan, inf) are written as the text format spells them', async (t) => {
  const text = mergeRuntimeSeries([{
    text: 'llamacpp:prompt_tokens_seconds nan\nllamacpp:predicted_tokens_seconds -nan\nup inf\ndown -inf 1700000000\nodd{note="a nan b"} 1\n',
    labels: { model: 'acme/a' },
  }])
  t.equal(text, [
    'llamacpp:prompt_tokens_seconds{model="acme/a"} NaN',
    'llamacpp:predicted_tokens_seconds{model="acme/a"} NaN',
    'up{model="acme/a"} +Inf',
    'down{model="acme/a"} -Inf 1700000000',
    'odd{model="acme/a",note="a nan b"} 1',
    '',
  ].join('\n'))
})
