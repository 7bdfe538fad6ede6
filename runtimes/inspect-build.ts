import { existsSync } from 'node:fs'
import { readFile, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { execa } from 'execa'
import type { Backend, RuntimeBuild, RuntimeFeatures } from './types.js'

/** The RPC worker's binary: its name since llama.cpp moved it under tools/rpc, then the older one. */
const RPC_SERVERS = ['ggml-rpc-server', 'rpc-server']
const BACKEND_OF_DEVICE: Array<[RegExp, Backend]> = [[/^\s*CUDA\d/m, 'cuda'], [/^\s*ROCm\d/m, 'rocm'], [/^\s*(Metal|MTL)\d?/m, 'metal'], [/^\s*Vulkan\d/m, 'vulkan']]

/**
 * Checks a folder holding a llama-server by running it: `--version` says what it is, `--help` what it
 * supports (flags differ between releases), `--list-devices` which backend it was built for when nobody
 * said. Returns null, with the reason, when it does not run.
 */
export async function inspectBuild (binDir: string, source: RuntimeBuild['source'], backend: Backend | null, env: NodeJS.ProcessEnv = process.env): Promise<RuntimeBuild | { error: string }> {
  const serverPath = join(binDir, 'llama-server')
  if (!existsSync(serverPath)) return { error: `${serverPath} does not exist` }
  const run = (args: string[]) => execa(serverPath, args, { env, timeout: 10_000, reject: false, stdin: 'ignore', all: true, forceKillAfterDelay: 500 })
  const described = await describeBinary(serverPath, run, env.LD_LIBRARY_PATH)
  if ('error' in described) return described
  const { version, commit, help, patched } = described
  let detected = backend
  if (detected === null) {
    const devices = (await run(['--list-devices'])).all ?? ''
    detected = BACKEND_OF_DEVICE.find(([pattern]) => pattern.test(devices))?.[1] ?? 'cpu'
  }
  const quantizePath = join(binDir, 'llama-quantize')
  const rpcServerPath = RPC_SERVERS.map((name) => join(binDir, name)).find((path) => existsSync(path)) ?? null
  return {
    backend: detected,
    binDir,
    serverPath,
    quantizePath: existsSync(quantizePath) ? quantizePath : null,
    rpcServerPath,
    version,
    commit,
    source,
    // A flag, not a longer one that starts with it (`--no-webui-mcp-proxy`, `--fit-target`).
    features: {
      jinja: hasFlag(help, '--jinja'),
      flashAttn: hasFlag(help, '--flash-attn'),
      noWebui: hasFlag(help, '--no-webui'),
      fit: hasFlag(help, '--fit'),
      noWarmup: hasFlag(help, '--no-warmup'),
      // Only a build with the RPC backend lists it (llama_supports_rpc()).
      rpc: hasFlag(help, '--rpc'),
      loadGate: hasFlag(help, '--load-gate'),
      ...patched,
    },
  }
}

function hasFlag (help: string, flag: string): boolean {
  return new RegExp(`(^|[\\s,])${flag}(?![\\w-])`, 'm').test(help)
}

/**
 * What a binary says of itself: its version and commit (--version), its flags (--help), and which of llamagate's
 * patches (runtimes/build/patches) it carries: request fields and file formats, not flags, so a text each patch
 * adds is looked for in the binary itself.
 */
interface Description { version: string, commit: string | null, help: string, patched: Pick<RuntimeFeatures, 'cacheSalt' | 'slotCheckpoints' | 'cachedPromptSaves'> }

/** A text only each patch puts into llama-server (0001, 0002, 0003). */
const PATCH_MARKS = { cacheSalt: 'cache_salt', slotCheckpoints: 'slot checkpoints: implausible checkpoint', cachedPromptSaves: 'No cached prompt at index' } as const

type Run = (args: string[]) => Promise<{ all?: string, exitCode?: number, signal?: string, shortMessage?: string }>

/**
 * A binary's `--version` and `--help`, kept per file (path, inode, size, mtime, and the library path it loads
 * with) for the process's life: they are the binary's own, and every app a process builds (a test file builds
 * dozens) would otherwise start llama-server twice to read them again. A failure is not kept.
 */
const DESCRIBED = new Map<string, Promise<Description | { error: string }>>()

async function describeBinary (serverPath: string, run: Run, libraryPath: string | undefined): Promise<Description | { error: string }> {
  const { ino, size, mtimeMs } = await stat(serverPath)
  const key = `${serverPath}\0${ino}\0${size}\0${mtimeMs}\0${libraryPath ?? ''}`
  let described = DESCRIBED.get(key)
  if (described === undefined) {
    described = readDescription(serverPath, run)
    DESCRIBED.set(key, described)
    described.then((d) => { if ('error' in d) DESCRIBED.delete(key) }, () => DESCRIBED.delete(key))
  }
  return described
}

async function readDescription (serverPath: string, run: Run): Promise<Description | { error: string }> {
  const result = await run(['--version'])
  const text = result.all ?? ''
  const match = /version:\s*(\S+)(?:\s*\(build \d+, commit (\w+)\))?/.exec(text)
  if (result.exitCode !== 0 || !match) {
    return { error: `${serverPath} --version failed (exit ${result.exitCode ?? result.signal}): ${text.trim().split('\n').slice(-2).join(' | ') || result.shortMessage}` }
  }
  const binary = await readFile(serverPath)
  const patched = { cacheSalt: binary.includes(PATCH_MARKS.cacheSalt), slotCheckpoints: binary.includes(PATCH_MARKS.slotCheckpoints), cachedPromptSaves: binary.includes(PATCH_MARKS.cachedPromptSaves) }
  return { version: match[1]!, commit: match[2] ?? null, help: (await run(['--help'])).all ?? '', patched }
}
