// The one TypeScript-to-JavaScript step, for the build (dist/) and for the tests' loader: esbuild strips the types
// with the project's compiler options. One step for both makes the code a test imports from the sources and the code
// a spawned dist/ process runs the same, so coverage merges their functions (two compilers map a function's end
// differently, and every function run in only one kind of process counted half covered). Types are checked by tsc.
import { readFileSync } from 'node:fs'

// esbuild reads the options that change the emitted code (target, class fields) from tsconfig.json, comments and all.
const tsconfigRaw = readFileSync(new URL('../../tsconfig.json', import.meta.url), 'utf8')

/**
 * The JavaScript of one TypeScript file, with its source map inline or apart (`sourcefile`: the name the map gives
 * the source).
 * @param {string} source
 * @param {string} sourcefile
 * @param {'inline' | 'external'} sourcemap
 */
export async function transpile (source, sourcefile, sourcemap) {
  // Imported on first use: a test process whose files are all in the loader's cache never needs it.
  const { transform } = await import('esbuild')
  return transform(source, { loader: 'ts', format: 'esm', sourcemap, sourcefile, sourcesContent: false, tsconfigRaw })
}

/**
 * Dependencies made of many small ES modules (TypeBox 373, execa 106 with its own, the hub client 90, the GGUF reader 72
 * with @huggingface/tasks), bundled each
 * into one file, dist/vendor/<name>.js: every CLI run and server start loads them, and each module costs its own
 * resolve, read and compile (several times that under a test runner's loader hooks). `llamagate run` loaded 443
 * modules, 373 of them TypeBox's; with `--parameter` its `typebox/value` brought 677.
 */
export const VENDORED = ['typebox', 'typebox/value', 'execa', '@huggingface/hub', '@huggingface/gguf']

/** The file a vendored dependency is bundled into, relative to dist/. */
export function vendorFile (name) {
  return `vendor/${name.replace(/^@/, '').replace(/\//g, '-')}.js`
}
