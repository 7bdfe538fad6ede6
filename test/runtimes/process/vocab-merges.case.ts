import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { writeRealisticModel } from '../../../scripts/fixtures/realistic-model.js'
import { withBareServer } from '../../helpers/bare-llama-server.js'
import { keptFixture, runtimeSource } from '../../helpers/realistic-models.js'

// runtimes/build/patches/0008 and 0009: a BPE vocabulary's merges are ranked in one flat table instead of a map of
// string pairs, and byte-level token text is decoded to bytes through a codepoint table. Every text of llama.cpp's
// own tokenizer tests (models/ggml-vocab-<name>.gguf.inp) must still come out as the ids its .out file lists, through
// llama-server's /tokenize, as tests/test-tokenizer-0.cpp reads them (no special tokens added or parsed), and those
// ids must detokenize to the text. The vocabularies: both of the loader's merge readers ("gpt2" and "gemma4"), the
// largest merge lists (Llama 3's, Qwen's), and ones whose merges hold spaces-as-bytes and CJK.
const VOCABS: Record<string, string> = {
  'gpt-2': '<|endoftext|>',
  'llama-bpe': '<|eot_id|>',
  qwen2: '<|im_end|>',
  qwen35: '<|im_end|>',
  'gemma-4': '<turn|>',
  'deepseek-coder': '<｜end▁of▁sentence｜>',
  'command-r': '<|END_OF_TURN_TOKEN|>',
  starcoder: '<|endoftext|>',
}
const SEPARATOR = '\n__ggml_vocab_test__\n'

/** A tiny model with `vocab`'s tokenizer, made once per source tree and kept beside the other test fixtures. */
function vocabModel (vocab: string, eosToken: string): Promise<string> {
  const options = { vocab, eosToken, nLayer: 1, nEmbd: 32, nHead: 2, nHeadKv: 1, nFf: 32 }
  return keptFixture(`vocab-${vocab}`, (commit) => ({ options, commit }), (file, llamaCppSrc) => writeRealisticModel({ ...options, file, llamaCppSrc, name: `tiny ${vocab}` }))
}

/** The tests of models/ggml-vocab-<vocab>.gguf.inp and .out, paired as test-tokenizer-0.cpp pairs them. */
async function tokenizerTests (vocab: string): Promise<Array<{ text: string, ids: number[] }>> {
  const { source } = await runtimeSource()
  const base = join(source, 'models', `ggml-vocab-${vocab}.gguf`)
  const raw = await readFile(`${base}.inp`, 'utf8')
  const texts = raw.split(SEPARATOR)
  // The file ends with a separator, after which test-tokenizer-0 reads no text.
  if (raw.endsWith(SEPARATOR)) texts.pop()
  const lines = (await readFile(`${base}.out`, 'utf8')).split('\n')
  if (lines.at(-1) === '') lines.pop()
  if (texts.length !== lines.length) throw new Error(`${base}: ${texts.length} texts against ${lines.length} lines of ids`)
  return texts.map((text, i) => ({ text, ids: lines[i]!.trim() === '' ? [] : lines[i]!.trim().split(' ').map(Number) }))
}

for (const [vocab, eosToken] of Object.entries(VOCABS)) {
  t.test(`${vocab}: llama.cpp's tokenizer tests, id for id`, async (t) => {
    const tests = await tokenizerTests(vocab)
    t.ok(tests.length >= 20, `${tests.length} texts`)
    await withBareServer(await vocabModel(vocab, eosToken), [], async ({ base }) => {
      const wrong: string[] = []
      const unlike: string[] = []
      for (const { text, ids } of tests) {
        const res = await fetch(`${base}/tokenize`, { method: 'POST', body: JSON.stringify({ content: text, add_special: false, parse_special: false }) })
        const got = ((await res.json()) as { tokens: number[] }).tokens
        if (JSON.stringify(got) !== JSON.stringify(ids)) wrong.push(`${JSON.stringify(text.slice(0, 60))}: ${got.join(' ')} instead of ${ids.join(' ')}`)
        const back = await fetch(`${base}/detokenize`, { method: 'POST', body: JSON.stringify({ tokens: ids }) })
        const content = ((await back.json()) as { content: string }).content
        if (content !== text) unlike.push(`${JSON.stringify(text.slice(0, 60))} came back as ${JSON.stringify(content.slice(0, 60))}`)
      }
      t.same(wrong, [], 'every text tokenizes as llama.cpp\'s test says')
      t.same(unlike, [], 'and its ids detokenize to the text')
    })
  })
}
