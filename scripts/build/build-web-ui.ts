import { realpathSync } from 'node:fs'
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises'
import { basename, join, relative } from 'node:path'
import { pathToFileURL } from 'node:url'
import { build } from 'esbuild'
import { PACKAGE_ROOT } from '../../core/base/paths.js'

/** Where the page's sources are, and where `npm run build` puts the bundle that plugins/web-ui serves. */
export const WEB_UI_SOURCE = join(PACKAGE_ROOT, 'plugins', 'web-ui', 'page')
export const WEB_UI_DIST = join(PACKAGE_ROOT, 'dist', 'web-ui')

export interface BuildWebUiOptions {
  /** @default WEB_UI_DIST */
  outDir?: string
}

/**
 * Bundles the web page (Preact, marked, DOMPurify, highlight.js, all from node_modules: nothing is fetched at
 * build or run time) into one script and one style sheet with content hashes in their names, and writes
 * index.html pointing at them. The hashes let the server mark the bundles immutable while index.html is
 * revalidated, so a rebuilt page is never mixed with an old script.
 */
export async function buildWebUi ({ outDir = WEB_UI_DIST }: BuildWebUiOptions = {}): Promise<string[]> {
  await rm(outDir, { recursive: true, force: true })
  await mkdir(outDir, { recursive: true })
  const result = await build({
    entryPoints: { app: join(WEB_UI_SOURCE, 'main.tsx') },
    outdir: outDir,
    entryNames: '[name]-[hash]',
    bundle: true,
    format: 'esm',
    minify: true,
    sourcemap: 'linked',
    // Browsers from 2023 on: module scripts, top-level await and :has() are there.
    target: ['chrome115', 'firefox115', 'safari16.4'],
    tsconfig: join(WEB_UI_SOURCE, 'tsconfig.json'),
    jsx: 'automatic',
    jsxImportSource: 'preact',
    legalComments: 'linked',
    metafile: true,
    logLevel: 'warning',
  })
  const outputs = Object.keys(result.metafile.outputs).map((file) => basename(file))
  const script = outputs.find((f) => f.endsWith('.js'))
  const style = outputs.find((f) => f.endsWith('.css'))
  if (!script || !style) throw new Error(`the web page bundle is incomplete: ${outputs.join(', ')}`)
  const template = await readFile(join(WEB_UI_SOURCE, 'index.html'), 'utf8')
  const html = template.replace('%STYLE%', style).replace('%SCRIPT%', script)
  await writeFile(join(outDir, 'index.html'), html)
  return ['index.html', ...outputs]
}

if (process.argv[1] && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) {
  const files = await buildWebUi()
  console.log(`web page built in ${relative(process.cwd(), WEB_UI_DIST) || '.'}: ${files.join(', ')}`)
}
