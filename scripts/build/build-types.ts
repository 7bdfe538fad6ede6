import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join, relative, resolve } from 'node:path'
import { PACKAGE_ROOT } from '../../core/base/paths.js'

/**
 * Writes dist/types: the declarations of `llamagate/plugin` and `llamagate/testing` (package.json's `exports` points
 * there), so that a plugin written in TypeScript, and its tests, type-check against the gateway it runs in. The
 * entries are core/platform/plugin-api.ts's and the test kit's, and only the files they reach are kept: the built-in plugins'
 * services and their decorations of Fastify's instance are not published (a plugin sees GatewayDecorators).
 */
const OUT = join(PACKAGE_ROOT, 'dist', 'types')
const API = 'core/platform/plugin-api.ts'
// llamagate/testing's entry: a gateway started in a plugin's own tests.
const TESTING = 'core/testing/test-gateway.ts'

const declarationOf = (file: string): string => file.replace(/\.ts$/, '.js')
// A declaration file's relative imports, `import('./x.js')` types and `export ... from` included.
const SPECIFIER = /(?:from\s+|import\s*\(\s*|import\s+)['"](\.{1,2}\/[^'"]+)['"]/g

/** The declaration files `entries` reach through relative imports, as paths under OUT. */
function reachedDeclarations (entries: string[]): Set<string> {
  const reached = new Set<string>()
  const walk = (file: string): void => {
    if (reached.has(file)) return
    reached.add(file)
    for (const [, specifier] of readFileSync(join(OUT, file), 'utf8').matchAll(SPECIFIER)) {
      const target = relative(OUT, resolve(OUT, dirname(file), specifier!)).replace(/\.js$/, '.d.ts')
      if (!existsSync(join(OUT, target))) throw new Error(`${file} imports ${specifier}, which has no declaration in ${OUT}`)
      walk(target)
    }
  }
  for (const entry of entries) walk(entry)
  return reached
}

/** Removes the declarations nothing published reaches (tsc declares every file the entries import, types or not). */
function prune (kept: Set<string>): void {
  for (const file of readdirSync(OUT, { recursive: true, encoding: 'utf8' })) {
    if (file.endsWith('.d.ts') && !kept.has(file)) rmSync(join(OUT, file))
  }
  // Folders left empty, deepest first.
  const dirs = readdirSync(OUT, { recursive: true, withFileTypes: true }).filter((d) => d.isDirectory())
    .map((d) => join(d.parentPath, d.name)).sort((a, b) => b.length - a.length)
  for (const dir of dirs) if (readdirSync(dir).length === 0) rmSync(dir, { recursive: true })
}

function main (): void {
  rmSync(OUT, { recursive: true, force: true })
  mkdirSync(OUT, { recursive: true })
  const project = join(OUT, 'tsconfig.json')
  writeFileSync(project, JSON.stringify({
    extends: '../../tsconfig.json',
    compilerOptions: { declaration: true, emitDeclarationOnly: true, noEmit: false, sourceMap: false, outDir: '.', rootDir: '../..' },
    include: [],
    files: [API, TESTING].map((file) => `../../${file}`),
  }))
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc')
  execFileSync(process.execPath, [tsc, '-p', project], { stdio: 'inherit' })
  rmSync(project)
  writeFileSync(join(OUT, 'plugin.d.ts'), [
    '// llamagate/plugin: the public plugin API (core/platform/plugin-api.ts).',
    `export * from './${declarationOf(API)}'`,
    '',
  ].join('\n'))
  writeFileSync(join(OUT, 'testing.d.ts'), [
    `// llamagate/testing: a gateway for a plugin's own tests (${TESTING}), its app typed as a plugin sees it.`,
    `export * from './${declarationOf(TESTING)}'`,
    `export type {} from './${declarationOf(API)}'`,
    '',
  ].join('\n'))
  prune(reachedDeclarations(['plugin.d.ts', 'testing.d.ts']))
}

main()
