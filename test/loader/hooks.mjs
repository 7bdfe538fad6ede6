// The TypeScript loader of the tests: esbuild strips the types of each .ts file as Node loads it, with an inline
// source map, so that stack traces and coverage point at the .ts lines. It replaces tap's ts-node plugin, which
// took 3-5 s per test process (the TypeScript compiler loaded in each of them); esbuild's service takes well under
// one. Types are checked apart (`npx tsc --noEmit`, and `npm run build`). tsx, tried first, writes each module on
// one line and its coverage then maps to nothing (every file 100 %).
import { createHash } from 'node:crypto'
import { existsSync } from 'node:fs'
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { transpile, VENDORED, vendorFile } from '../../scripts/build/transpile.mjs'

const relative = /^(\.{1,2}\/|\/|file:)/

/**
 * A `./x.js` that is not on disk but whose `./x.ts` is names the .ts source (NodeNext's rule: imports name the
 * emitted file): imported from a .ts file, from a .js one (the plugin fixtures import the sources), or a worker
 * thread's entry, `new URL('./x.js', import.meta.url)`. A .js file that exists (dist/) is taken as is. A vendored
 * dependency (scripts/build/transpile.mjs) is its bundle in dist/vendor, as dist/ has it.
 */
export async function resolve (specifier, context, next) {
  if (VENDORED.includes(specifier)) {
    // The bundle dist/ loads (npm test builds it first): the same code in one module instead of hundreds.
    const bundle = new URL(`../../dist/${vendorFile(specifier)}`, import.meta.url)
    if (existsSync(bundle)) return { url: bundle.href, shortCircuit: true }
  }
  if (relative.test(specifier) && specifier.endsWith('.js')) {
    const js = new URL(specifier, context.parentURL ?? pathToFileURL(`${process.cwd()}/`))
    const ts = new URL(`${js.href.slice(0, -3)}.ts`)
    if (js.protocol === 'file:' && !existsSync(js) && existsSync(ts)) return next(ts.href, context)
    const built = generatedInDist(js)
    if (built !== null) return { url: built.href, shortCircuit: true }
  }
  return next(specifier, context)
}

const ROOT = new URL('../../', import.meta.url)

/**
 * A `*.generated.js` that only the build writes, into dist/ (config.yaml's validator, Ajv's standalone code): the
 * build's, as a start from dist/ has it, rather than compiling the validator again in every test process.
 */
function generatedInDist (js) {
  if (js.protocol !== 'file:' || !js.pathname.endsWith('.generated.js') || !js.href.startsWith(ROOT.href)) return null
  const path = js.href.slice(ROOT.href.length)
  if (path.startsWith('dist/') || existsSync(js)) return null
  const built = new URL(`dist/${path}`, ROOT)
  return existsSync(built) ? built : null
}

export async function load (url, context, next) {
  if (!url.startsWith('file:') || !url.endsWith('.ts')) return next(url, context)
  const file = fileURLToPath(url)
  return { format: 'module', source: await transpiled(file, await readFile(file, 'utf8')), shortCircuit: true }
}

/**
 * Each process of a run loads the same few hundred files, and the first `transform` starts an esbuild process of
 * its own (232 of them in a suite run): the JavaScript is kept on disk by what it was made from, so that a file
 * is transpiled once until it changes.
 */
const CACHE = new URL('../../node_modules/.cache/llamagate-test-loader/', import.meta.url)
const SALT = `${process.version}\0${await readFile(new URL('../../scripts/build/transpile.mjs', import.meta.url), 'utf8')}` +
  `\0${await readFile(new URL('../../tsconfig.json', import.meta.url), 'utf8')}\0${await esbuildVersion()}`

async function transpiled (file, source) {
  const key = createHash('sha256').update(SALT).update('\0').update(file).update('\0').update(source).digest('hex')
  const cached = new URL(`${key}.js`, CACHE)
  try { return await readFile(cached, 'utf8') } catch { /* not yet */ }
  const { code } = await transpile(source, file, 'inline')
  // Written whole under a name of its own and renamed: the other test processes of the run read it meanwhile.
  await mkdir(CACHE, { recursive: true })
  const partial = new URL(`${key}.${process.pid}.tmp`, CACHE)
  await writeFile(partial, code)
  await rename(partial, cached)
  return code
}

/** esbuild's version, from its package.json: importing esbuild itself is only needed on a cache miss. */
async function esbuildVersion () {
  const { version } = JSON.parse(await readFile(createRequire(import.meta.url).resolve('esbuild/package.json'), 'utf8'))
  return version
}
