import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { execa } from 'execa'
import type { Backend, RuntimeBuild } from './types.js'

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
  const version = await run(['--version'])
  const versionText = version.all ?? ''
  const match = /version:\s*(\S+)(?:\s*\(build \d+, commit (\w+)\))?/.exec(versionText)
  if (version.exitCode !== 0 || !match) {
    return { error: `${serverPath} --version failed (exit ${version.exitCode ?? version.signal}): ${versionText.trim().split('\n').slice(-2).join(' | ') || (version as { shortMessage?: string }).shortMessage}` }
  }
  const help = (await run(['--help'])).all ?? ''
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
    version: match[1]!,
    commit: match[2] ?? null,
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
    },
  }
}

function hasFlag (help: string, flag: string): boolean {
  return new RegExp(`(^|[\\s,])${flag}(?![\\w-])`, 'm').test(help)
}
