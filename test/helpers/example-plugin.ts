import { execFile } from 'node:child_process'
import { mkdir, readFile, symlink, writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { transform } from 'esbuild'
import { PACKAGE_ROOT } from '../../core/base/paths.js'
import { tempDir } from './app.js'

// A third party's plugin as people write and install it: TypeScript against the published `llamagate/plugin`
// (package.json's exports, dist/types), compiled, installed as a package beside config.yaml, loaded by name.

const TSC = createRequire(import.meta.url).resolve('typescript/bin/tsc')
type Test = Parameters<typeof tempDir>[0]

/** An example plugin's source (docs/examples/<file>). */
export function exampleSource (file: string): Promise<string> {
  return readFile(join(PACKAGE_ROOT, 'docs/examples', file), 'utf8')
}

/** A folder where `llamagate` is installed (a link to this checkout), as beside a user's config.yaml. */
export async function projectDir (t: Test): Promise<string> {
  const dir = await tempDir(t)
  await mkdir(join(dir, 'node_modules'))
  await symlink(PACKAGE_ROOT, join(dir, 'node_modules', 'llamagate'), 'dir')
  return dir
}

/** Installs a plugin's TypeScript (or JavaScript) source, compiled to JavaScript, as the package `name` under `dir`'s node_modules. */
export async function installPlugin (dir: string, name: string, source: string): Promise<void> {
  const { code } = await transform(source, { loader: 'ts', format: 'esm' })
  const pkg = join(dir, 'node_modules', name)
  await mkdir(pkg, { recursive: true })
  await writeFile(join(pkg, 'package.json'), JSON.stringify({ name, type: 'module', exports: './index.js' }))
  await writeFile(join(pkg, 'index.js'), code)
}

/**
 * Type-checks TypeScript files (name: source) in `dir` against the published types, in one tsc run, strict as a
 * plugin author's project would be. Returns tsc's error lines.
 */
export async function typeCheck (dir: string, files: Record<string, string>): Promise<string[]> {
  for (const [name, source] of Object.entries(files)) await writeFile(join(dir, name), source)
  await writeFile(join(dir, 'tsconfig.json'), JSON.stringify({
    compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', target: 'ES2022', strict: true, noEmit: true, skipLibCheck: true, types: ['node'], typeRoots: [join(PACKAGE_ROOT, 'node_modules/@types')] },
    files: Object.keys(files),
  }))
  const result = await promisify(execFile)(process.execPath, [TSC, '-p', dir], { cwd: dir }).then(() => ({ stdout: '' }), (err: { stdout: string }) => err)
  return result.stdout.split('\n').filter((line) => /error TS\d+/.test(line))
}
