import { execFile } from 'node:child_process'
import { mkdir, readFile, symlink, writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { transform } from 'esbuild'
import { PACKAGE_ROOT } from '../../core/paths.js'
import { tempDir } from './app.js'

// A third party's plugin as people install it: a package beside config.yaml, with `llamagate` installed there.

type Test = Parameters<typeof tempDir>[0]

/** A folder where `llamagate` is installed (a link to this checkout), as beside a user's config.yaml. */
export async function projectDir (t: Test): Promise<string> {
  const dir = await tempDir(t)
  await mkdir(join(dir, 'node_modules'))
  await symlink(PACKAGE_ROOT, join(dir, 'node_modules', 'llamagate'), 'dir')
  return dir
}

/** Installs an example of docs/examples (`example`, a path), compiled to JavaScript, as the package `name` under `dir`'s node_modules. */
export async function installExample (example: string, dir: string, name: string, edit = (code: string) => code): Promise<void> {
  const { code } = await transform(edit(await readFile(example, 'utf8')), { loader: 'ts', format: 'esm' })
  const pkg = join(dir, 'node_modules', name)
  await mkdir(pkg, { recursive: true })
  await writeFile(join(pkg, 'package.json'), JSON.stringify({ name, type: 'module', exports: './index.js' }))
  await writeFile(join(pkg, 'index.js'), code)
}

/** The type errors tsc finds in `files` of `dir` (a plugin's project, `llamagate` installed there), one a line. */
export async function typeErrors (dir: string, files: string[]): Promise<string[]> {
  await writeFile(join(dir, 'tsconfig.json'), JSON.stringify({
    compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', target: 'ES2022', strict: true, noEmit: true, skipLibCheck: true, types: ['node'], typeRoots: [join(PACKAGE_ROOT, 'node_modules/@types')] },
    files,
  }))
  const result = await promisify(execFile)(process.execPath, [TSC, '-p', dir], { cwd: dir }).then(() => ({ stdout: '' }), (err: { stdout: string }) => err)
  return result.stdout.split('\n').filter((line) => /error TS\d+/.test(line))
}

const TSC = createRequire(import.meta.url).resolve('typescript/bin/tsc')
