import { existsSync, realpathSync } from 'node:fs'
import { pathToFileURL } from 'node:url'
import type { Config } from '../../core/platform/config.js'
import { loadConfigAndPlugins } from '../../core/platform/plugin-manifests.js'
import type { Converter } from '../../plugins/convert/converter.js'
import { converterFor as converterWith } from '../../plugins/convert/converter-for.js'
import { aptStep, LOCAL_HOST, requirementsOf, venvStep, type Say } from '../../plugins/convert/converter-setup.js'
import { APT_COMMAND, type ConverterReadiness } from '../../plugins/convert/python-env.js'
import { RuntimeRegistry } from '../../runtimes/registry.js'

export type { Say }

export interface SetupOptions {
  /** Only report: exit status 0 when ready, 1 when not, with what to install. @default false */
  check?: boolean
  /**
   * Non-interactive (CI): no virtual environment unless `venv` is set; Debian packages through apt when
   * root; failure when not ready at the end. @default false
   */
  ci?: boolean
  /** Try the virtual environment (needs a Python package index). @default true, false with `ci` */
  venv?: boolean
  /** Install Debian's packages with apt-get when root. @default true */
  apt?: boolean
}

/** The converter as the gateway would set it up: the chosen runtime's llama-quantize and source tree. */
export async function converterFor (config: Config): Promise<Converter> {
  return converterWith(config, await RuntimeRegistry.create({ config }))
}

/** Human lines for a readiness: what runs, what is papered over, or what to install. */
export function describeReadiness (r: ConverterReadiness): string[] {
  if (!r.ready) return [`conversion is NOT ready: ${r.problems.join('; ')}`, `to fix: ${r.fix}`]
  const lines = [`conversion is ready: ${r.python}, llama.cpp converter at ${r.llamaCppSrc}`]
  if (r.shim) lines.push(`compatibility runner in use (plugins/convert/converter-shim), standing in for: ${r.papered.join(', ')}`)
  lines.push(r.quantize ? `llama-quantize: ${r.quantize}` : `no llama-quantize: only f32, f16, bf16, q8_0 (${r.fix})`)
  return lines
}

/**
 * Makes SafeTensors conversion ready, asked for by hand: a virtual environment at `<data_dir>/converter-venv`
 * with llama.cpp's converter requirements where a Python package index answers (newer packages than Debian's);
 * else Debian's packages through apt-get when root, or the command to run. (A server's start takes the same
 * steps by itself, apt first: plugins/convert/converter-preparation.ts.)
 * @returns the readiness at the end
 */
export async function setupConverter (config: Config, opts: SetupOptions, say: Say): Promise<ConverterReadiness> {
  const converter = await converterFor(config)
  let readiness = await converter.readiness({ fresh: true })
  if (opts.check || readiness.ready) return readiness
  const src = readiness.llamaCppSrc
  if (!src) return readiness // nothing to install Python for: the fix says how to get a tree
  if ((opts.venv ?? !opts.ci) && existsSync(requirementsOf(src))) {
    if (await LOCAL_HOST.indexReachable()) {
      await venvStep({ llamaCppSrc: src, dataDir: config.dataDir, say })
      converter.forget()
      readiness = await converter.readiness({ fresh: true })
      if (readiness.ready) return readiness
    } else {
      say('no Python package index reachable: skipping the virtual environment')
    }
  }
  if (opts.apt !== false && existsSync('/usr/bin/apt-get')) {
    if (LOCAL_HOST.root) {
      await aptStep({ say })
      converter.forget()
      readiness = await converter.readiness({ fresh: true })
    } else {
      say(`not root: run this, then this script again:\n  sudo sh -c 'apt-get update && ${APT_COMMAND}'`)
    }
  }
  return readiness
}

function parseArgs (argv: string[]): SetupOptions {
  const opts: SetupOptions = {}
  for (const arg of argv) {
    if (arg === '--check') opts.check = true
    else if (arg === '--ci') opts.ci = true
    else if (arg === '--venv') opts.venv = true
    else if (arg === '--no-venv') opts.venv = false
    else if (arg === '--no-apt') opts.apt = false
    else throw new Error(`unknown argument ${arg}: expected --check, --ci, --venv, --no-venv, --no-apt`)
  }
  return opts
}

/** `npm run setup:converter [-- --check | --ci]` */
async function main (): Promise<void> {
  const opts = parseArgs(process.argv.slice(2))
  const say: Say = (line) => process.stdout.write(`[converter] ${line}\n`)
  const readiness = await setupConverter((await loadConfigAndPlugins()).config, opts, say)
  for (const line of describeReadiness(readiness)) say(line)
  if (!readiness.ready) process.exitCode = 1
}

if (process.argv[1] && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) {
  main().catch((err) => { process.stderr.write(`[converter] ${(err as Error).message}\n`); process.exit(1) })
}
