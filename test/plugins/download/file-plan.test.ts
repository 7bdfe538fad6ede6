import t from 'tap'
import { checkPath, planFiles } from '../../../plugins/download/file-plan.js'

t.test('file choice: tags, the default order, split files, SafeTensors, nothing usable', async (t) => {
  const files = (paths: string[]) => paths.map((path) => ({ path, size: 1, sha256: null }))
  const quants = files(['m-Q2_K.gguf', 'm-Q4_K_M.gguf', 'm-Q8_0.gguf', 'mmproj-m-f16.gguf', 'm-imatrix.gguf'])
  t.equal(planFiles('a/b', quants, null).primary, 'm-Q4_K_M.gguf')
  t.equal(planFiles('a/b', quants, 'q8_0').primary, 'm-Q8_0.gguf', 'a quant label, case-insensitive')
  t.equal(planFiles('a/b', quants, 'M-Q2_K.GGUF').primary, 'm-Q2_K.gguf', 'a file name')
  t.equal(planFiles('a/b', files(['m-Q2_K.gguf', 'm-Q8_0.gguf']), null).primary, 'm-Q8_0.gguf', 'then Q8_0')
  t.equal(planFiles('a/b', files(['m-Q6_K.gguf', 'm-Q3_K_M.gguf', 'm-Q2_K.gguf']), null).primary, 'm-Q3_K_M.gguf', 'then the nearest smaller quant')
  t.equal(planFiles('a/b', files(['m-F16.gguf', 'm-Q6_K.gguf']), null).primary, 'm-F16.gguf', 'then the first')
  t.throws(() => planFiles('a/b', quants, 'Q5_K_M'), /has no GGUF for tag "Q5_K_M"; it offers: Q2_K, Q4_K_M, Q8_0/)
  const split = planFiles('a/b', files(['x/big-Q4_K_M-00002-of-00002.gguf', 'x/big-Q4_K_M-00001-of-00002.gguf', 'small-Q8_0.gguf']), null)
  t.same(split.files.map((f) => f.path), ['x/big-Q4_K_M-00001-of-00002.gguf', 'x/big-Q4_K_M-00002-of-00002.gguf'])
  t.equal(split.primary, 'x/big-Q4_K_M-00001-of-00002.gguf')
  const st = planFiles('a/b', files(['config.json', 'model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors', 'model.safetensors.index.json', 'tokenizer.json', 'README.md', 'sub/x.safetensors']), null)
  t.equal(st.format, 'safetensors')
  t.same(st.files.map((f) => f.path).sort(), ['config.json', 'model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors', 'model.safetensors.index.json', 'tokenizer.json'])
  t.throws(() => planFiles('a/b', files(['README.md', 'model.bin']), null), /holds neither a GGUF file nor SafeTensors weights with a config\.json \(it has: README\.md, model\.bin\)/)
  for (const bad of ['../../x.gguf', '/etc/x.gguf', 'a/../../x.gguf', 'a\\b.gguf']) {
    t.throws(() => planFiles('a/b', files([bad, 'm-Q4_K_M.gguf']), null), /unsafe file path/, bad)
  }
})

t.test('file choice: edge cases', async (t) => {
  const files = (paths: string[]) => paths.map((path) => ({ path, size: 1, sha256: null }))
  t.equal(planFiles('a/b', files(['Q8_0/m-Q8_0.gguf', 'Q4_K_M/m-Q4_K_M.gguf']), null).primary, 'Q4_K_M/m-Q4_K_M.gguf', 'quants in sub-folders')
  t.equal(planFiles('a/b', files(['m-UD-Q4_K_XL.gguf', 'm-Q4_K_S.gguf']), null).primary, 'm-Q4_K_S.gguf', 'Q4_K_XL is larger than Q4_K_M: the nearest smaller is Q4_K_S')
  const split = planFiles('a/b', files(['m-Q8_0-00001-of-00002.gguf', 'm-Q8_0-00002-of-00002.gguf', 'm-Q2_K.gguf']), 'Q8_0')
  t.same(split.files.map((f) => f.path), ['m-Q8_0-00001-of-00002.gguf', 'm-Q8_0-00002-of-00002.gguf'], 'a tag picks every part of a split')
  t.equal(planFiles('a/b', files(['m-Q8_0-00002-of-00002.gguf', 'm-Q8_0-00001-of-00002.gguf']), 'm-q8_0-00002-of-00002.gguf').primary, 'm-Q8_0-00001-of-00002.gguf', 'naming any part loads part 1')
  t.throws(() => planFiles('a/b', files(['mmproj-m-f16.gguf', 'm.imatrix.gguf', 'README.md']), null), /holds neither a GGUF file/, 'mmproj and imatrix are never the model')
  t.throws(() => planFiles('a/b', files(['model.safetensors', 'README.md']), null), /holds neither/, 'SafeTensors weights need a config.json')
  t.throws(() => planFiles('a/b', [], null), /it has: no files/)
  t.doesNotThrow(() => checkPath('sub/dir/m-Q4_K_M.gguf'))
  for (const bad of ['', '.', 'a/./b', 'a//b', 'a\0b', 'C:\\x']) t.throws(() => checkPath(bad), /unsafe file path/, JSON.stringify(bad))
})
