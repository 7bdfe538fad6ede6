import { execFileSync } from 'node:child_process'
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { PACKAGE_ROOT } from '../../core/base/paths.js'

/**
 * Writes dist/types: the declarations of `llamagate/plugin` and `llamagate/testing` (package.json's `exports` points
 * there), so that a plugin written in TypeScript, and its tests, type-check against the gateway it runs in. Its entry, plugin.d.ts, is
 * core/platform/plugin-api.ts's, plus every file that widens a type it exports (a built-in plugin's decorators on Fastify's
 * instance, its config section's keys): so `app.store.list()` and `app.config.conversion` are typed in a plugin as
 * in the gateway.
 * Only what those files reach is declared; the rest of the gateway ships no types.
 */
const OUT = join(PACKAGE_ROOT, 'dist', 'types')
// A file that widens a type the API exports: Fastify's instance (a plugin's decorators), the resolved
// configuration (a plugin's config section), a request's usage.
const AUGMENTS = /^declare module '/m
const FLOORS = ['core', 'plugins', 'runtimes']
// The web page is built apart, for the browser (tsconfig.json leaves it out too).
const EXCLUDED = 'plugins/web-ui/page'
// llamagate/testing's entry: a gateway started in a plugin's own tests.
const TESTING = 'scripts/testing/test-gateway.ts'

function augmentingFiles (): string[] {
  const files = FLOORS.flatMap((floor) => readdirSync(join(PACKAGE_ROOT, floor), { recursive: true, encoding: 'utf8' })
    .map((file) => `${floor}/${file}`))
  return files.filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts') && !file.startsWith(EXCLUDED))
    .filter((file) => AUGMENTS.test(readFileSync(join(PACKAGE_ROOT, file), 'utf8'))).sort()
}

function main (): void {
  rmSync(OUT, { recursive: true, force: true })
  mkdirSync(OUT, { recursive: true })
  const plugins = augmentingFiles()
  // A project of only the public entry and the augmenting plugins: tsc declares what they reach, nothing more.
  const project = join(OUT, 'tsconfig.json')
  writeFileSync(project, JSON.stringify({
    extends: '../../tsconfig.json',
    compilerOptions: { declaration: true, emitDeclarationOnly: true, noEmit: false, sourceMap: false, outDir: '.', rootDir: '../..' },
    include: [],
    files: ['core/platform/plugin-api.ts', TESTING, ...plugins].map((file) => `../../${file}`),
  }))
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc')
  execFileSync(process.execPath, [tsc, '-p', project], { stdio: 'inherit' })
  rmSync(project)
  const augments = plugins.map((file) => `export type {} from './${file.replace(/\.ts$/, '.js')}'`)
  writeFileSync(join(OUT, 'plugin.d.ts'), [
    '// llamagate/plugin: the public plugin API (core/platform/plugin-api.ts) and what the built-in plugins add to its types.',
    "export * from './core/platform/plugin-api.js'",
    ...augments,
    '',
  ].join('\n'))
  writeFileSync(join(OUT, 'testing.d.ts'), [
    `// llamagate/testing: a gateway for a plugin's own tests (${TESTING}), its app typed as the plugins have it.`,
    `export * from './${TESTING.replace(/\.ts$/, '.js')}'`,
    ...augments,
    '',
  ].join('\n'))
}

main()
