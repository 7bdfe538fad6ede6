import { appendFile, readFile, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { ensureBenchModels, QUANTS, SHAPES } from '../../../scripts/bench/bench-models.js'
import { tempDir } from '../../helpers/app.js'
import { runtimeSource } from '../../helpers/realistic-models.js'
import { cpuRuntime } from '../../helpers/runtime.js'

// A bench shape's files are kept between runs, with the recipe they were made by: a file another recipe made (the
// shape changed since) is made again, so that a bench never measures a model that is no longer the shape's.
t.test('a bench shape is made once, and again when its recipe changed', async (t) => {
  const benchDir = await tempDir(t)
  const said: string[] = []
  const options = { shape: 'llama-tiny' as const, quants: QUANTS, build: await cpuRuntime(), llamaCppSrc: (await runtimeSource()).source, benchDir, say: (line: string) => { said.push(line) } }
  const recipeFile = join(benchDir, 'llama-tiny.recipe.json')
  const recipe = JSON.parse(JSON.stringify(SHAPES['llama-tiny'].model)) as Record<string, unknown>
  const writes = (): number => said.filter((line) => line.startsWith('writing the llama-tiny shape')).length

  const made = await ensureBenchModels(options)
  t.equal(writes(), 1, 'made on first use')
  t.same(JSON.parse(await readFile(recipeFile, 'utf8')), recipe, 'the recipe is kept beside the files')
  const q8 = made.get('Q8_0')!
  const size = (await stat(q8)).size
  await appendFile(q8, 'x') // a mark that only a file made again loses

  await ensureBenchModels(options)
  t.equal(writes(), 1, 'the same recipe: nothing made again')
  t.equal((await stat(q8)).size, size + 1, 'the files kept as they were')

  await writeFile(recipeFile, JSON.stringify({ ...recipe, nLayer: 3 }))
  await ensureBenchModels(options)
  t.equal(writes(), 2, 'another recipe: made again')
  t.equal((await stat(q8)).size, size, 'the kept file replaced')
  t.same(JSON.parse(await readFile(recipeFile, 'utf8')), recipe, 'and the recipe it was made by recorded')
})
