import { existsSync } from 'node:fs'
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { execa } from 'execa'
import { extract } from 'tar'

/**
 * The llama.cpp release llamagate is tested with. Offline, its source comes from the git bundle that the
 * node-llama-cpp npm package ships (`llama/gitRelease.bundle`), since the npm registry is reachable where
 * GitHub may not be.
 */
export const PINNED = { tag: 'v0.5.0', npmPackage: 'node-llama-cpp@3.22.1', repository: 'https://github.com/ggml-org/llama.cpp' }

export type Say = (line: string) => void

/** `<dataDir>/src/llama.cpp-<tag>`: where a fetched source tree is kept (and reused). */
export function sourceDir (dataDir: string, tag = PINNED.tag): string {
  return join(dataDir, 'src', `llama.cpp-${tag}`)
}

/**
 * A llama.cpp source tree: the one the user named, else the one fetched before, else a fresh clone of the
 * pinned release, else the bundle inside the pinned node-llama-cpp package.
 */
export async function findOrFetchSource (dataDir: string, userSource: string | null, say: Say): Promise<{ dir: string, tag: string }> {
  if (userSource) {
    if (!existsSync(join(userSource, 'CMakeLists.txt'))) throw new Error(`${userSource} is not a llama.cpp source tree (no CMakeLists.txt)`)
    const described = await execa('git', ['-C', userSource, 'describe', '--tags', '--always'], { reject: false })
    return { dir: userSource, tag: described.exitCode === 0 ? described.stdout.trim() : 'custom' }
  }
  const dir = sourceDir(dataDir)
  if (existsSync(join(dir, 'CMakeLists.txt'))) return { dir, tag: PINNED.tag }
  say(`fetching llama.cpp ${PINNED.tag} into ${dir}`)
  const cloned = await execa('git', ['clone', '--quiet', '--depth', '1', '--branch', PINNED.tag, PINNED.repository, dir], { reject: false, timeout: 120_000 })
  if (cloned.exitCode === 0) return { dir, tag: PINNED.tag }
  say(`git clone failed (${cloned.stderr.trim().split('\n').at(-1) ?? 'no network'}); using the source bundled in ${PINNED.npmPackage}`)
  await rm(dir, { recursive: true, force: true })
  const work = await mkdtemp(join(tmpdir(), 'llamagate-src-'))
  try {
    await execa('npm', ['pack', PINNED.npmPackage, '--silent', '--pack-destination', work], { cwd: work })
    const tarball = (await readdir(work)).find((name) => name.endsWith('.tgz'))
    if (tarball === undefined) throw new Error(`npm pack ${PINNED.npmPackage} left no tarball`)
    // Only the two files needed, out of a package of several hundred MiB.
    await extract({ file: join(work, tarball), cwd: work }, ['package/llama/gitRelease.bundle', 'package/llama/llama.cpp.info.json'])
    const info = JSON.parse(await readFile(join(work, 'package/llama/llama.cpp.info.json'), 'utf8')) as { tag: string }
    if (info.tag !== PINNED.tag) say(`note: ${PINNED.npmPackage} carries llama.cpp ${info.tag}, not ${PINNED.tag}`)
    await execa('git', ['clone', '--quiet', join(work, 'package/llama/gitRelease.bundle'), dir])
    return { dir, tag: PINNED.tag }
  } finally {
    await rm(work, { recursive: true, force: true })
  }
}
