// Writes dist/: each TypeScript file of the server, its scripts and tests as JavaScript with a source map beside it,
// through the same transform as the tests' loader (scripts/build/transpile.mjs), and the vendored dependencies each as one
// bundle that dist/ imports instead of the package. `npm run build` checks the types first.
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { build as bundle } from 'esbuild'
import { transpile, VENDORED, vendorFile } from './transpile.mjs'

const root = fileURLToPath(new URL('../..', import.meta.url))
// tsconfig.json's include and exclude.
const FOLDERS = ['core', 'plugins', 'runtimes', 'scripts', 'test']
const EXCLUDED = new Set([join(root, 'plugins/web-ui/page')])

async function * sources (dir) {
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) {
      if (!EXCLUDED.has(path) && entry.name !== 'node_modules') yield * sources(path)
    } else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) {
      yield path
    }
  }
}

async function build (file) {
  const out = join(root, 'dist', relative(root, file)).replace(/\.ts$/, '.js')
  const { code, map } = await transpile(await readFile(file, 'utf8'), relative(dirname(out), file), 'external')
  const vendored = code.replace(VENDORED_IMPORT, (_, before, name) => {
    const target = relative(dirname(out), join(root, 'dist', vendorFile(name)))
    return `${before}"${target.startsWith('.') ? target : `./${target}`}"`
  })
  await mkdir(dirname(out), { recursive: true })
  const name = out.slice(dirname(out).length + 1)
  await writeFile(`${out}.map`, map)
  await writeFile(out, `${vendored}//# sourceMappingURL=${name}.map\n`)
}

// `from "execa"`, `import("execa")`: esbuild's output spells every import with double quotes.
const VENDORED_IMPORT = new RegExp(`(from |import\\()"(${VENDORED.map((n) => n.replace(/[/]/g, '\\/')).join('|')})"`, 'g')

/** One ES module holding the whole package; the CommonJS inside (cross-spawn) gets a real `require`. */
function vendor (name) {
  return bundle({
    stdin: { contents: `export * from '${name}'`, resolveDir: root, loader: 'js' },
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    outfile: join(root, 'dist', vendorFile(name)),
    banner: { js: "import { createRequire as vendorRequire } from 'node:module'; const require = vendorRequire(import.meta.url);" },
    logLevel: 'warning',
  })
}

const files = []
for (const folder of FOLDERS) for await (const file of sources(join(root, folder))) files.push(file)
await Promise.all([...files.map(build), ...VENDORED.map(vendor)])
