import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { execa } from 'execa'
import type { Backend, RuntimeBuild } from './types.js'

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
  return {
    backend: detected,
    binDir,
    serverPath,
    quantizePath: existsSync(quantizePath) ? quantizePath : null,
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
    },
  }
}

function hasFlag (help: string, flag: string): boolean {
  return new RegExp(`(^|[\\s,])${flag}(?![\\w-])`, 'm').test(help)
}
